"""Model analysts: a role played by a model through the shared tool loop.

Per decision instant and list of names, the model reads the evidence of its role that the
`MarketView` shows at T (nothing else) and calls the forced tool `submit_signals`, whose
schema is the typed signal: per name (an `enum` of the names) a `score` in [-1, 1], a
`confidence` in [0, 1] and the `cited` record ids. A repeated name is refused with a code
and retried; a name left out has no view (score 0, confidence 0). Cited ids are *not*
restricted to what was shown: the capture checks each against the view and counts the
invisible ones as citation violations.

Evidence by role (our own words, plain text):
- `technical`: per name the look-back return and daily volatility of adjusted closes
  (the rule analyst's features, `momentum_days`).
- `news`: per name the visible news of the last `news_lookback_days`, newest ten, as
  `[record id] time headline`.
- `filings`: per name the latest visible filing, `[record id] time title`.
- `fundamental`: per name where the last close sits in the range of the last 252
  adjusted closes (position, high, low) and the latest visible 10-K or 10-Q as
  `[record id] time title`, with its period end.
- `sentiment`: per name the count of visible headlines over `sentiment_lookback_days` and
  over `news_lookback_days`, then the newest ten of the longer look-back.
- `risk`: per name the maximum drawdown, downside volatility and beta to the index over
  `risk_days` daily returns (the rule analyst's features). Cites nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from tradebench.agents.loop_types import LoopConfig
from tradebench.agents.tool_loop import run_tool_loop
from tradebench.agents.tools import SubmitTool
from tradebench.benchmarks.mandate.analysts import (
    MAX_CITED,
    RANGE_DAYS,
    AnalystSettings,
    Signal,
    fundamental,
    latest_periodic,
    risk,
    technical,
)
from tradebench.benchmarks.mandate.sources import AnalystCall, SourceOutput
from tradebench.errors import ToolError
from tradebench.llm.base import ChatModel
from tradebench.llm.types import ToolSpec
from tradebench.view import MarketView

TOOL_NAME = "submit_signals"
SYSTEM_PROMPT = (
    "You are the {role} analyst of a US equity research team. Before the market opens "
    "you get the evidence of your role for a list of names: everything your desk can see "
    "at this instant, nothing later. Call `{tool}` once with a signal per name you have a "
    "view on: score from -1 (clearly negative for the stock) to 1 (clearly positive), 0 "
    "for no view; confidence from 0 (nothing to go on) to 1; and in `cited` the ids, as "
    "written in brackets, of the records your signal rests on. Cite only ids shown to you. "
    "A name you leave out gets no view."
)


def signal_schema(names: Sequence[str]) -> dict[str, Any]:
    """`submit_signals` arguments: up to one typed signal per name."""
    item = {
        "type": "object",
        "properties": {
            "symbol": {"type": "string", "enum": sorted(names)},
            "score": {"type": "number", "minimum": -1, "maximum": 1},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "cited": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_CITED},
        },
        "required": ["symbol", "score", "confidence", "cited"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"signals": {"type": "array", "items": item, "maxItems": len(names)}},
        "required": ["signals"],
        "additionalProperties": False,
    }


def check_signals(arguments: dict[str, Any], label: str) -> list[Signal]:
    """The typed signals of a call (schema already checked), or a `ToolError` naming each
    repeated name as `[DUPLICATE_NAME]`."""
    seen: set[str] = set()
    problems, out = [], []
    for i, item in enumerate(arguments["signals"]):
        name = str(item["symbol"])
        if name in seen:
            problems.append(f"signals/{i}: [DUPLICATE_NAME] {name} is given twice")
            continue
        seen.add(name)
        out.append(
            Signal(
                analyst=label,
                symbol=name,
                score=float(item["score"]),
                confidence=float(item["confidence"]),
                cited=tuple(str(c) for c in item["cited"]),
            )
        )
    if problems:
        raise ToolError("; ".join(problems))
    return out


def _record_lines(recs: pd.DataFrame, name: str, limit: int) -> list[str]:
    mine = _naming(recs, name).iloc[-limit:]
    return [
        f"  [{r.record_id}] {pd.Timestamp(r.ts_available):%Y-%m-%d %H:%M} UTC {r.title}"
        for r in mine.itertuples(index=False)
    ]


def _pct(value: float | str | None) -> str:
    return "n/a" if value is None else f"{100 * float(value):.2f}%"


def _news(view: MarketView, names: Sequence[str], days: int, s: AnalystSettings) -> pd.DataFrame:
    """Visible news naming any of `names` over `days`, less the news delay."""
    recs = view.records(symbols=names, kinds="news", lookback=f"{days}D")
    return recs[
        recs["ts_available"] <= view.decision_time - pd.Timedelta(minutes=s.news_delay_minutes)
    ]


def _naming(recs: pd.DataFrame, name: str) -> pd.DataFrame:
    return recs[recs["symbols"].map(lambda syms: name in syms).to_numpy(bool)]


def _technical_lines(view: MarketView, names: Sequence[str], s: AnalystSettings) -> list[str]:
    return [
        f"{sig.symbol}: {s.momentum_days}-day return {_pct(sig.features.get('momentum'))}, "
        f"daily volatility {_pct(sig.features.get('volatility'))}"
        for sig in technical(view, names, s)
    ]


def _records_lines(
    recs: pd.DataFrame, names: Sequence[str], limit: int, head: dict[str, str] | None = None
) -> list[str]:
    lines = []
    for name in names:
        found = _record_lines(recs, name, limit)
        lead = f"{name}:" + (f" {head[name]}" if head else "")
        lines.append(lead if found or head else f"{name}: no records")
        lines += found
    return lines


def _fundamental_lines(view: MarketView, names: Sequence[str], s: AnalystSettings) -> list[str]:
    filings = view.records(symbols=names, kinds="filing")
    lines = []
    for sig in fundamental(view, names, s):
        f = sig.features
        where = (
            "price range n/a"
            if f.get("range_position") is None
            else f"last close at {_pct(f['range_position'])} of its {RANGE_DAYS}-day range "
            f"({_pct(f['off_high'])} from the high, {_pct(f['above_low'])} above the low)"
        )
        report = latest_periodic(_naming(filings, sig.symbol))
        lines.append(f"{sig.symbol}: {where}")
        if report is None:
            lines.append("  no periodic report visible")
        else:
            lines.append(
                f"  [{report['record_id']}] {pd.Timestamp(report['ts_available']):%Y-%m-%d %H:%M}"
                f" UTC {report['title']} (period end {f['period_end'] or 'n/a'})"
            )
    return lines


def _sentiment_lines(view: MarketView, names: Sequence[str], s: AnalystSettings) -> list[str]:
    recs = _news(view, names, s.sentiment_lookback_days, s)
    recent = view.decision_time - pd.Timedelta(days=s.news_lookback_days)
    head = {}
    for name in names:
        mine = _naming(recs, name)
        head[name] = (
            f"{len(mine)} headlines in {s.sentiment_lookback_days} days, "
            f"{int((mine['ts_available'] > recent).sum())} in the last {s.news_lookback_days}"
        )
    return _records_lines(recs, names, MAX_CITED, head)


def _risk_lines(view: MarketView, names: Sequence[str], s: AnalystSettings) -> list[str]:
    out = []
    for sig in risk(view, names, s):
        beta = sig.features.get("beta")
        out.append(
            f"{sig.symbol}: {s.risk_days}-day max drawdown {_pct(sig.features.get('max_drawdown'))}"
            f", downside volatility {_pct(sig.features.get('downside_vol'))}, beta to the "
            f"index {'n/a' if beta is None else f'{float(beta):.2f}'}"
        )
    return out


def evidence(role: str, view: MarketView, names: Sequence[str], s: AnalystSettings) -> str:
    """The role's evidence for `names` at the view's decision instant, as text."""
    lines = [f"Decision instant {view.decision_time.isoformat()} (before the open)."]
    if role == "technical":
        lines += _technical_lines(view, names, s)
    elif role == "news":
        lines += _records_lines(_news(view, names, s.news_lookback_days, s), names, MAX_CITED)
    elif role == "filings":
        lines += _records_lines(view.records(symbols=names, kinds="filing"), names, 1)
    elif role == "fundamental":
        lines += _fundamental_lines(view, names, s)
    elif role == "sentiment":
        lines += _sentiment_lines(view, names, s)
    elif role == "risk":
        lines += _risk_lines(view, names, s)
    else:
        raise ValueError(f"unknown analyst role {role!r}")
    return "\n".join(lines)


@dataclass
class ModelAnalystSource:
    """A role played by a model (`label` = `<role>:<agent>`)."""

    role: str
    agent: str
    model: ChatModel
    settings: AnalystSettings
    max_submit_retries: int = 2

    @property
    def label(self) -> str:
        """`<role>:<agent>`."""
        return f"{self.role}:{self.agent}"

    async def signals(self, view: MarketView, names: Sequence[str]) -> SourceOutput:
        """One forced `submit_signals` call (plus coded retries) over `names`."""
        label = self.label
        spec = ToolSpec(
            name=TOOL_NAME, description="Submit your signals.", parameters=signal_schema(names)
        )
        tool = SubmitTool(spec=spec, validate_fn=lambda a: check_signals(a, label))
        result = await run_tool_loop(
            self.model,
            system=SYSTEM_PROMPT.format(role=self.role, tool=TOOL_NAME),
            user=evidence(self.role, view, names, self.settings),
            tools=[],
            submit=tool,
            config=LoopConfig(
                max_tool_calls=0,
                max_submit_retries=self.max_submit_retries,
                offer_submit_in_research=False,
            ),
        )
        given = {s.symbol: s for s in (result.action or [])}
        signals = [
            given.get(n) or Signal(analyst=label, symbol=n, score=0.0, confidence=0.0)
            for n in names
        ]
        call = AnalystCall(
            analyst=label,
            tokens_in=result.usage.input_tokens,
            tokens_out=result.usage.output_tokens,
            retries=result.retries,
            fallback=result.fallback,
        )
        return SourceOutput(signals, [call])
