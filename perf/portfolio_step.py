"""Harness time of one open-research step on the real CSI300 universe, model time excluded.

Per step: build the point-in-time context, the masked user message and the tools, then
run six tool calls (market context, a screen, a snapshot, a comparison, the portfolio,
a risk check) through the masked tool path (argument unmasking, schema checks, result
masking) and validate a submission. Target: < 10 ms. Run: `python perf/portfolio_step.py`.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import import_real_cn

from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts
from tradebench.benchmarks.portfolio.tools import research_tools, submit_tool
from tradebench.data import load_dataset
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import build_masker
from tradebench.view import MarketView


async def one_step(ds, day, masker, prompts) -> None:
    view = MarketView(ds, day)
    account = Account(1_000_000)
    snap = account.snapshot(view.last("close"), view.column_map)
    ctx = StepContext(view, snap, MarketRules.cn())
    user_message(ctx, masker, prompts, "open_research", StepInfo(1, 20, (), 0.0, 0.0))
    tools = {t.name: t for t in research_tools(ctx, masker)}
    ids = [masker.symbol_label(s) for s in view.members()[:3]]
    await tools["get_market_context"].run({})
    await tools["screen_candidates"].run({"feature": "ret_20d", "top_k": 10})
    await tools["get_stock_snapshot"].run({"stock_id": ids[0]})
    await tools["compare_candidates"].run({"stock_ids": ids})
    await tools["get_portfolio_state"].run({})
    await tools["risk_check"].run({"orders": [{"stock_id": ids[1], "side": "BUY", "shares": 100}]})
    submit_tool(ctx, masker).accept(
        {
            "orders": [
                {
                    "stock_id": ids[1],
                    "side": "BUY",
                    "shares": 100,
                    "confidence": 0.5,
                    "reason": "measured submission",
                }
            ],
            "overall_reason": "a submission to validate in the loop",
        }
    )


async def timed_steps(ds, days, masker, prompts) -> float:
    """Mean seconds per step inside one event loop (as the harness runs), after a warm-up."""
    await one_step(ds, days[0], masker, prompts)
    start = time.perf_counter()
    for day in days:
        await one_step(ds, day, masker, prompts)
    return (time.perf_counter() - start) / len(days)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cn"
        import_real_cn(out, start="2023-01-01", end="2024-12-31")
        ds = load_dataset(out)
        prompts = load_prompts()
        days = ds.panel.dates[(ds.panel.dates >= np.datetime64("2024-03-01"))][:40]
        for level in ("bright", "blinded"):
            masker = build_masker(level, ds.panel.symbols, ds.panel.dates, days[0], 0, "perf")
            per_step = asyncio.run(timed_steps(ds, days, masker, prompts)) * 1e3
            print(
                f"{level:>8}: {per_step:6.2f} ms per open-research step "
                f"(6 tool calls + message + submission, {len(view_members(ds, days[0]))} "
                f"names; target < 10 ms)"
            )


def view_members(ds, day) -> np.ndarray:
    return MarketView(ds, day).members()


if __name__ == "__main__":
    main()
