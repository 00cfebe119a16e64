"""Orders past the account are refused at submission, coded and counted like any refusal.

Through the real path (loopback model, `run_spec`, trace, steps, report tables), a scripted
model submits order lists each of whose orders is legal alone but whose list is not:
three BUYs at `target_weight` 1.0 (300% of NAV), two orders on one stock, a SELL of more
shares than held, and BUYs that with the kept holding pass 100%. Each is refused with its
code (`OVER_INVESTED`, `DUPLICATE_NAME`, `OVER_HELD`), the feedback quotes no identifier
the model wrote, and a list inside the account passes. The oracle is the account as the
broker booked it (`orders.parquet`) and arithmetic written here.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict
from tradebench.benchmarks import run_spec
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.report.episodes import code_counts, submission_rejections
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines

TABLE_ROW = re.compile(r"^\| (asset_\d+) \|", re.MULTILINE)
HOLDING = re.compile(r"^- (asset_\d+): ([\d,]+) shares", re.MULTILINE)
FEATURE = "ret_20d"


def _user(request: RecordedRequest) -> str:
    return next(m["content"] for m in request.body["messages"] if m["role"] == "user")


def _buy(ident: str, **size: Any) -> dict[str, Any]:
    return {
        "stock_id": ident,
        "side": "BUY",
        "confidence": 0.5,
        "reason": "a scripted order to check",
        **size,
    }


def _sell(ident: str, shares: int) -> dict[str, Any]:
    return {"stock_id": ident, "side": "SELL", "shares": shares, "confidence": 0.5,
            "reason": "a scripted order to check"}  # fmt: skip


def _attempts(user: str) -> list[list[dict[str, Any]]]:
    """The order lists of one step, one attempt after another (the last one passes)."""
    table = sorted(set(TABLE_ROW.findall(user)))
    if HOLDING.search(user) is None:  # day 1: flat account
        a, b, c = table[:3]
        return [
            [_buy(a, target_weight=1.0), _buy(b, target_weight=1.0), _buy(c, target_weight=1.0)],
            [_buy(a, target_weight=0.2), _buy(a, target_weight=0.1)],
            [_buy(a, target_weight=0.5), _buy(b, target_weight=0.3)],
        ]
    holdings = {i: int(n.replace(",", "")) for i, n in HOLDING.findall(user)}
    ident, shares = sorted(holdings.items())[0]
    others = [t for t in table if t not in holdings][:2]
    return [
        [_sell(ident, shares + 100)],
        [_buy(others[0], target_weight=0.4), _buy(others[1], target_weight=0.4)],
        [_sell(ident, shares), _buy(others[0], target_weight=0.1)],
    ]


def _scripted(request: RecordedRequest) -> Reply:
    done = sum(m["role"] == "tool" for m in request.body["messages"])
    orders = _attempts(_user(request))[done]
    return Reply.tool(
        "submit_action",
        {"orders": orders, "overall_reason": "one scripted attempt of the account check"},
    )


@pytest.fixture(scope="module")
def run(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two blinded fixed-candidate steps whose first attempts break the account."""
    out = tmp_path_factory.mktemp("account") / "run"
    with LoopbackServer(responder=_scripted) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["fixed_candidate"])
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-04"}]
        spec["agents"] = spec["agents"][:1]
        # raw prices: the account shows real share counts, so a SELL of more than held can
        # be written (under rebased prices a quantity at or above the shown holding means
        # all of it, `PriceScale.shares`, and cannot pass the holding)
        spec["options"] = {"max_submit_retries": 4, "price_mode": "raw"}
        spec["agents"][0]["max_attempts"] = 1
        asyncio.run(run_spec(RunSpec.model_validate(spec), out))
    return out


def _errors(step: dict[str, Any]) -> list[str]:
    results = [json.loads(m["content"]) for m in step["messages"] if m["role"] == "tool"]
    return [r["error"]["message"] for r in results if "error" in r]


def test_three_full_weight_buys_are_refused_as_over_invested(run: Path) -> None:
    folder = next((run / "episodes").glob("scripted_*"))
    first, _ = trace_lines(folder)
    assert _errors(first) == [
        "orders/1: [OVER_INVESTED] the orders and the holdings they keep add up to 300% of "
        "NAV, the first past 100% being this one; keep target weights and kept holdings at "
        "most 100%",
        "orders/1: [DUPLICATE_NAME] an earlier order already names this stock; give one "
        "order per stock",
    ]
    orders = pd.read_parquet(folder / "orders.parquet")
    day1 = orders[orders["date"] == orders["date"].min()]
    assert list(day1["target_weight"]) == [0.5, 0.3]  # the list that fits went through


def test_kept_holdings_count_and_a_sell_past_the_holding_is_refused(run: Path) -> None:
    folder = next((run / "episodes").glob("scripted_*"))
    positions = pd.read_parquet(folder / "positions.parquet")
    day1 = positions[positions["date"] == positions["date"].min()].sort_values("symbol")
    _, second = trace_lines(folder)
    over_held, over_invested = _errors(second)
    asked = second["tool_calls"][0]["arguments"]["orders"][0]["shares"]
    held = asked - 100  # the scripted model asks 100 more than it holds
    assert held in set(day1["shares"])  # the broker's book agrees
    assert over_held == (
        "orders/0: [OVER_HELD] sells more than the holding; sell at most what is held"
    )
    # both holdings are kept: their weights at the close plus two BUYs at 40% each, refused
    # at the first order past 100%
    kept = float(day1["weight"].sum())
    expected, first = f"{kept + 0.8:.0%}", 0 if kept + 0.4 > 1 else 1
    assert over_invested == (
        f"orders/{first}: [OVER_INVESTED] the orders and the holdings they keep add up to "
        f"{expected} of NAV, the first past 100% being this one; keep target weights and "
        "kept holdings at most 100%"
    )


def test_refusals_are_counted_and_quote_nothing_the_model_wrote(run: Path) -> None:
    folder = next((run / "episodes").glob("scripted_*"))
    steps = pd.read_parquet(folder / "steps.parquet")
    assert list(steps["retries"]) == [2, 2] and not steps["fallback"].any()
    rejections = submission_rejections(trace_lines(folder))
    assert code_counts(rejections) == "OVER_INVESTED × 2, DUPLICATE_NAME × 1, OVER_HELD × 1"
    for step in trace_lines(folder):
        for message in _errors(step):
            assert "asset_" not in message  # no identifier of the model's echoed


def _researcher(request: RecordedRequest) -> Reply:
    """Screens, dry-runs three BUYs at 1.0 through `risk_check`, then submits nothing."""
    if request.forced_tool() == "submit_action":
        return Reply.tool("submit_action", {"orders": [], "overall_reason": "hold after a dry run"})
    results = [json.loads(m["content"]) for m in request.body["messages"] if m["role"] == "tool"]
    if not results:
        return Reply.tool("screen_candidates", {"feature": FEATURE, "top_k": 5})
    if len(results) == 1:
        ids = [row["stock_id"] for row in results[0]["rows"]][:3]
        orders = [{"stock_id": i, "side": "BUY", "target_weight": 1.0} for i in ids]
        return Reply.tool("risk_check", {"orders": orders})
    return Reply.say("done researching")


def test_the_dry_run_refuses_what_the_submission_would(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=_researcher) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["open_research"])
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-01"}]
        spec["agents"] = spec["agents"][:1]
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
    folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
    (step,) = trace_lines(folder)
    results = [json.loads(m["content"]) for m in step["messages"] if m["role"] == "tool"]
    dry = next(r for r in results if "predicted" in r)
    assert dry["refused"] == [
        {
            "order": 1,
            "code": "OVER_INVESTED",
            "problem": "the orders and the holdings they keep add up to 300% of NAV, the "
            "first past 100% being this one; keep target weights and kept holdings at most "
            "100%",
        }
    ]
