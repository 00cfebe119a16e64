"""Build a probe set: draw (stock, date) pairs and export what a masked agent sees.

Each probe calls `get_market_context`, `screen_candidates` and `get_stock_snapshot`
through the portfolio benchmark's real masked tools (`research_tools`), exactly as the
agent would on decision day T, the first day of an episode (masker origin and the
rebasing day both sit at T). The gold answer is stored beside the payloads.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from tradebench.agents.tools import Tool
from tradebench.benchmarks.portfolio.agent import rebase_close
from tradebench.benchmarks.portfolio.context import PriceMode, StepContext
from tradebench.benchmarks.portfolio.tools import research_tools
from tradebench.data.dataset import Dataset, load_dataset
from tradebench.errors import ConfigError
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import MaskLevel, build_masker
from tradebench.probe.sampling import DrawResult, draw_pairs
from tradebench.probe.store import ProbeSet
from tradebench.probe.types import PROBE_BOARDS, Gold, Probe, ProbeSetHeader, StratumCount, Variant
from tradebench.view import MarketView


class BuildConfig(BaseModel):
    """Knobs of `tradebench probe build`."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(default=200, ge=1)
    """Probes to draw."""
    seed: int = 0
    """Seed of the draw and of each probe's alias map."""
    levels: tuple[MaskLevel, ...] = ("blinded",)
    """Mask levels to export."""
    price_modes: tuple[PriceMode, ...] = ("raw", "rebased")
    """Price modes to export."""
    windows: int = Field(default=5, ge=1)
    """Time windows of the stratification."""
    boards: tuple[str, ...] = PROBE_BOARDS
    """Boards of the stratification."""
    lookback: int = Field(default=10, ge=2, le=30)
    """Bars in each snapshot."""
    warmup: int = Field(default=61, ge=1)
    """Trading days of history before the first eligible decision day."""
    screen_feature: str = "ret_20d"
    """Feature of the `screen_candidates` call."""
    screen_top_k: int = Field(default=10, ge=1, le=30)
    """Rows of the `screen_candidates` call."""


def _calls(config: BuildConfig, target_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("get_market_context", {}),
        ("screen_candidates", {"feature": config.screen_feature, "top_k": config.screen_top_k}),
        ("get_stock_snapshot", {"stock_id": target_id, "lookback": config.lookback}),
    ]


async def _run_calls(
    tools: dict[str, Tool], calls: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Run each call through the masked tool (schema check, unmask, run, mask)."""
    return [
        {"tool": name, "arguments": args, "result": await tools[name].run(args)}
        for name, args in calls
    ]


def export_variants(
    ds: Dataset, pos: int, symbol: str, probe_id: str, config: BuildConfig
) -> list[Variant]:
    """The masked payloads of one (stock, decision day) under every level and price mode."""
    panel = ds.panel
    day = panel.dates[pos]
    view = MarketView(ds, day)
    rules = MarketRules.for_market(ds.market)
    account = Account(rules.initial_cash).snapshot(view.last("close"), view.column_map)
    out = []
    for mode in config.price_modes:
        rebase = rebase_close(view, day) if mode == "rebased" else None
        ctx = StepContext(view, account, rules, mode, rebase)
        for level in config.levels:
            masker = build_masker(level, panel.symbols, panel.dates, day, config.seed, probe_id)
            tools = {t.name: t for t in research_tools(ctx, masker)}
            target = masker.symbol_label(symbol)
            calls = asyncio.run(_run_calls(tools, _calls(config, target)))
            out.append(Variant(level=level, price_mode=mode, target_id=target, calls=calls))
    return out


def _sectors(ds: Dataset) -> dict[str, str]:
    inst = ds.instruments.dropna(subset=["sector"])
    return dict(zip(inst["symbol"].astype(str), inst["sector"].astype(str), strict=True))


def _header(ds: Dataset, path: Path, config: BuildConfig, drawn: DrawResult) -> ProbeSetHeader:
    panel = ds.panel
    days = [d.date() for d in pd.DatetimeIndex(panel.dates)]
    strata = [
        StratumCount(window=w, board=b, quota=q, available=a, drawn=k)
        for (w, b), q, a, k in zip(
            drawn.strata,
            drawn.allocation.quotas,
            drawn.available,
            drawn.allocation.counts,
            strict=True,
        )
    ]
    universe_boards = sorted({str(b) for b in panel.boards})
    return ProbeSetHeader(
        dataset=str(path),
        dataset_name=ds.manifest.name,
        market=ds.market,
        currency=ds.manifest.currency,
        index_symbol=ds.manifest.index_symbol,
        calendar=days,
        date_lo=drawn.windows[0][0] - 1,
        date_hi=drawn.windows[-1][1] - 1,
        sectors=sorted(set(_sectors(ds).values())),
        boards=universe_boards,
        n=config.n,
        seed=config.seed,
        windows=[(days[lo - 1], days[hi - 1]) for lo, hi in drawn.windows],
        strata=strata,
        levels=list(config.levels),
        price_modes=list(config.price_modes),
        lookback=config.lookback,
        screen={"feature": config.screen_feature, "top_k": config.screen_top_k},
    )


def build_probe_set(dataset_dir: Path, config: BuildConfig | None = None) -> ProbeSet:
    """Draw the pairs and export their masked payloads with the gold answers.

    Raises:
        ConfigError: The dataset has no eligible (stock, date) pair.
    """
    config = config or BuildConfig()
    ds = load_dataset(dataset_dir)
    drawn = draw_pairs(
        ds, config.n, config.seed, config.boards, config.windows, config.lookback, config.warmup
    )
    if not drawn.draws:
        raise ConfigError(
            f"{dataset_dir} has no eligible (stock, date) pair: it needs more than "
            f"{config.warmup} trading days and stocks on the boards {list(config.boards)}"
        )
    panel, sectors = ds.panel, _sectors(ds)
    probes = []
    for i, d in enumerate(drawn.draws, start=1):
        probe_id = f"p{i:04d}"
        symbol = str(panel.symbols[d.col])
        last = pd.Timestamp(panel.dates[d.pos - 1]).date()
        gold = Gold(
            symbol=symbol,
            decision_day=pd.Timestamp(panel.dates[d.pos]).date(),
            date=last,
            date_pos=d.pos - 1,
            sector=sectors.get(symbol),
            board=str(panel.boards[d.col]),
        )
        probes.append(
            Probe(
                probe_id=probe_id,
                window=d.window,
                stratum_board=d.board,
                universe_size=int(MarketView(ds, panel.dates[d.pos]).member_mask().sum()),
                gold=gold,
                variants=export_variants(ds, d.pos, symbol, probe_id, config),
            )
        )
    return ProbeSet(_header(ds, Path(dataset_dir), config, drawn), tuple(probes))


def short_strata(header: ProbeSetHeader) -> list[StratumCount]:
    """Strata that could not meet their quota (their shortfall was filled elsewhere)."""
    return [s for s in header.strata if s.drawn < s.quota]
