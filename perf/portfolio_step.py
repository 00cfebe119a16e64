"""Harness time of one open-research step on the real CSI300 universe, model time excluded.

Per step: build the point-in-time context, the masked user message and the tools, then
run six tool calls (market context, a screen, a snapshot, a comparison, the portfolio,
a risk check) through the masked tool path (argument unmasking, schema checks, result
masking) and validate a submission. Target: < 10 ms.

Two accounts, side by side: an empty CNY 1M account, and a realistic book of 50 holdings
(about 1.8% of NAV each, priced at T-1's close), 10 of them booked as bought at T-1's open
under T+1 and not yet unlocked, so the message, the portfolio tool and the risk check
carry sellable < held rows. (In `run_backtest` the account is unlocked before the
snapshot, so an agent sees such rows only in what it simulates itself; the locked rows
here make the step's T+1 path as heavy as it gets.) With the book, the risk check and
the submission also sell a locked and a sellable holding. Each figure is the median over
`--repeats` passes of the mean over 40 days (range in brackets).
Run: `python perf/portfolio_step.py [--repeats N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import import_real_cn, spread

from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts
from tradebench.benchmarks.portfolio.tools import research_tools, submit_tool
from tradebench.data import load_dataset
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import build_masker
from tradebench.view import MarketView

BOOK_NAMES = 50
LOCKED_NAMES = 10
BOOK_WEIGHT = 0.018
REPEATS = 5


def realistic_book(view: MarketView) -> Account:
    """A CNY 1M account with 50 member holdings bought at T-1's close; the last 10 still
    locked by T+1 (bought on T-1, not unlocked), the rest sellable."""
    close = view.last("close")
    budget = BOOK_WEIGHT * 1_000_000  # names whose one lot fits the target weight
    members = [s for s in view.members() if close[view.column(s)] * 100 <= budget]
    picks = members[:: max(len(members) // BOOK_NAMES, 1)][:BOOK_NAMES]
    rules = MarketRules.cn()
    account = Account(1_000_000)
    for i, symbol in enumerate(picks):
        price = float(close[view.column(symbol)])
        shares = max(math.floor(BOOK_WEIGHT * 1_000_000 / price / 100) * 100, 100)
        account.record_buy(symbol, shares, price, rules.cost(shares * price, "BUY"), True)
        if i < len(picks) - LOCKED_NAMES:
            account.holdings[symbol].available = shares
    return account


def step_orders(account: Account, ids: list[str], label: Any) -> list[dict[str, Any]]:
    """The orders the step checks and submits: with holdings, SELL a locked and a sellable
    one first, then the BUY; without, the BUY alone."""
    orders: list[dict[str, Any]] = []
    locked = [s for s, h in account.holdings.items() if h.available < h.shares]
    free = [s for s, h in account.holdings.items() if h.available == h.shares]
    for symbol in locked[:1] + free[:1]:
        orders.append({"stock_id": label(symbol), "side": "SELL", "shares": account.shares(symbol)})
    return [*orders, {"stock_id": ids[1], "side": "BUY", "shares": 100}]


async def one_step(ds, day, masker, prompts, account: Account) -> None:
    view = MarketView(ds, day)
    snap = account.snapshot(view.last("close"), view.column_map)
    ctx = StepContext(view, snap, MarketRules.cn())
    user_message(ctx, masker, prompts, "open_research", StepInfo(1, 20, (), 0.0, 0.0))
    tools = {t.name: t for t in research_tools(ctx, masker)}
    ids = [masker.symbol_label(s) for s in view.members()[:3]]
    orders = step_orders(account, ids, masker.symbol_label)
    await tools["get_market_context"].run({})
    await tools["screen_candidates"].run({"feature": "ret_20d", "top_k": 10})
    await tools["get_stock_snapshot"].run({"stock_id": ids[0]})
    await tools["compare_candidates"].run({"stock_ids": ids})
    await tools["get_portfolio_state"].run({})
    await tools["risk_check"].run({"orders": orders})
    submit_tool(ctx, masker).accept(
        {
            "orders": [{**o, "confidence": 0.5, "reason": "measured submission"} for o in orders],
            "overall_reason": "a submission to validate in the loop",
        }
    )


async def timed_steps(ds, days, masker, prompts, accounts: list[Account]) -> float:
    """Mean seconds per step inside one event loop (as the harness runs), after a warm-up."""
    await one_step(ds, days[0], masker, prompts, accounts[0])
    start = time.perf_counter()
    for day, account in zip(days, accounts, strict=True):
        await one_step(ds, day, masker, prompts, account)
    return (time.perf_counter() - start) / len(days)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed passes (>= 3)")
    repeats = max(parser.parse_args().repeats, 3)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cn"
        import_real_cn(out, start="2023-01-01", end="2024-12-31")
        ds = load_dataset(out)
        prompts = load_prompts()
        days = ds.panel.dates[(ds.panel.dates >= np.datetime64("2024-03-01"))][:40]
        books = {
            "empty": [Account(1_000_000) for _ in days],
            "50 held": [realistic_book(MarketView(ds, d)) for d in days],
        }
        held = books["50 held"][0]
        n_locked = sum(h.available < h.shares for h in held.holdings.values())
        print(
            f"{len(view_members(ds, days[0]))} names; book: {len(held.holdings)} holdings, "
            f"{n_locked} locked by T+1, cash {held.cash / 1e6:.1%} of NAV; "
            "6 tool calls + message + submission; target < 10 ms"
        )
        for level in ("bright", "blinded"):
            masker = build_masker(level, ds.panel.symbols, ds.panel.dates, days[0], 0, "perf")
            cells = []
            for label, accounts in books.items():
                runs = [
                    asyncio.run(timed_steps(ds, days, masker, prompts, accounts))
                    for _ in range(repeats)
                ]
                cells.append(f"{label} {spread(runs, 1e3, '.2f')} ms")
            print(f"{level:>8}: " + " | ".join(cells))


def view_members(ds, day) -> np.ndarray:
    return MarketView(ds, day).members()


if __name__ == "__main__":
    main()
