"""Harness time of one open-research step on the real CSI300 universe, model time excluded.

Per step: build the point-in-time context, the masked user message and the tools, then
run six tool calls (market context, a screen, a snapshot, a comparison, the portfolio,
a risk check) through the masked tool path (argument unmasking, schema checks, result
masking, the JSON text the model reads) and validate a submission. Target: a blinded step
with the book under 5 ms of CPU time; the bright step is its anchor.

Two accounts, side by side: an empty CNY 1M account, and a realistic book of 50 holdings
(about 1.8% of NAV each, priced at T-1's close), 10 of them booked as bought at T-1's open
under T+1 and not yet unlocked, so the message, the portfolio tool and the risk check
carry sellable < held rows. (In `run_backtest` the account is unlocked before the
snapshot, so an agent sees such rows only in what it simulates itself; the locked rows
here make the step's T+1 path as heavy as it gets.) With the book, the risk check and
the submission also sell a locked and a sellable holding.

Times are CPU time of this process (`time.process_time`): time spent waiting for a core
does not count, though a busy machine still slows each instruction (shared caches), so
compare the cells of one run rather than runs. The cells (level x price mode x book) take
turns pass by pass, so a change of load meets them all alike. What the model sends (its
ids, calls and orders) is built before the clock starts: only the harness is timed.
Each figure is the median over `--repeats` passes of the mean over 40 days (min .. max in
brackets). `blinded, rebased` is how runs show a blinded episode by default (`price_mode`
unset).
Run: `python perf/portfolio_step.py [--repeats N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import import_real_cn, spread

from tradebench.agents.tool_loop import to_json
from tradebench.benchmarks.portfolio.agent import rebase_close
from tradebench.benchmarks.portfolio.context import PriceMode, StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts
from tradebench.benchmarks.portfolio.tools import research_tools, submit_tool
from tradebench.data import load_dataset
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import MaskLevel, build_masker
from tradebench.view import MarketView

BOOK_NAMES = 50
LOCKED_NAMES = 10
BOOK_WEIGHT = 0.018
REPEATS = 5
TARGET_MS = 5.0
"""A blinded step with the book, in CPU milliseconds."""


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


@dataclass(frozen=True)
class ModelSide:
    """What the model sends in one step: its six tool calls and its submission (built
    before the clock starts; only the harness's side is timed)."""

    calls: list[tuple[str, dict[str, Any]]]
    submission: dict[str, Any]


def model_side(ds, day, masker, account: Account) -> ModelSide:
    """The step's tool calls and submission, with ids as the model reads them."""
    ids = [masker.symbol_label(s) for s in MarketView(ds, day).members()[:3]]
    orders = step_orders(account, ids, masker.symbol_label)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_market_context", {}),
        ("screen_candidates", {"feature": "ret_20d", "top_k": 10}),
        ("get_stock_snapshot", {"stock_id": ids[0]}),
        ("compare_candidates", {"stock_ids": ids}),
        ("get_portfolio_state", {}),
        ("risk_check", {"orders": orders}),
    ]
    submission = {
        "orders": [{**o, "confidence": 0.5, "reason": "measured submission"} for o in orders],
        "overall_reason": "a submission to validate in the loop",
    }
    return ModelSide(calls, submission)


async def one_step(
    ds, day, masker, prompts, account: Account, price_mode: PriceMode, sent: ModelSide
) -> None:
    view = MarketView(ds, day)
    snap = account.snapshot(view.last("close"), view.column_map)
    first_day = masker.calendar[masker.origin]
    base = rebase_close(view, first_day) if price_mode == "rebased" else None
    ctx = StepContext(view, snap, MarketRules.cn(), price_mode, base)
    user_message(ctx, masker, prompts, "open_research", StepInfo(1, 20, (), 0.0, 0.0))
    tools = {t.name: t for t in research_tools(ctx, masker)}
    for name, arguments in sent.calls:
        to_json(await tools[name].run(arguments))  # the text the model reads
    submit_tool(ctx, masker).accept(sent.submission)


async def timed_steps(ds, days, masker, prompts, accounts: list[Account], price_mode) -> float:
    """Mean CPU seconds per step inside one event loop (as the harness runs), after a
    warm-up step."""
    sides = [model_side(ds, d, masker, a) for d, a in zip(days, accounts, strict=True)]
    await one_step(ds, days[0], masker, prompts, accounts[0], price_mode, sides[0])
    start = time.process_time()
    for day, account, sent in zip(days, accounts, sides, strict=True):
        await one_step(ds, day, masker, prompts, account, price_mode, sent)
    return (time.process_time() - start) / len(days)


CELLS: tuple[tuple[MaskLevel, PriceMode], ...] = (
    ("bright", "raw"),
    ("blinded", "raw"),
    ("blinded", "rebased"),
)
"""(level, price mode) rows: bright is the anchor, `blinded, rebased` the default blinded run."""


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
            f"6 tool calls + message + submission; CPU ms per step, median of {repeats} "
            "alternated passes of 40 days"
        )
        maskers = {
            level: build_masker(level, ds.panel.symbols, ds.panel.dates, days[0], 0, "perf")
            for level in {level for level, _ in CELLS}
        }
        times: dict[tuple[str, str, str], list[float]] = {}
        for _ in range(repeats):  # every cell once per pass: load changes meet them all
            for level, price_mode in CELLS:
                for label, accounts in books.items():
                    run = timed_steps(ds, days, maskers[level], prompts, accounts, price_mode)
                    times.setdefault((level, price_mode, label), []).append(asyncio.run(run))
        for level, price_mode in CELLS:
            cells = [
                f"{label} {spread(times[(level, price_mode, label)], 1e3, '.2f')}"
                for label in books
            ]
            print(f"{level + ', ' + price_mode:>17}: " + " | ".join(cells))
        anchor = statistics.median(times[("bright", "raw", "50 held")]) * 1e3
        for price_mode in ("raw", "rebased"):
            blinded = statistics.median(times[("blinded", price_mode, "50 held")]) * 1e3
            verdict = "meets" if blinded < TARGET_MS else "misses"
            print(
                f"blinded, {price_mode}, 50 held: {blinded:.2f} ms beside bright {anchor:.2f} ms "
                f"({blinded / anchor:.2f}x) and the target {TARGET_MS:.0f} ms ({verdict} it)"
            )


def view_members(ds, day) -> np.ndarray:
    return MarketView(ds, day).members()


if __name__ == "__main__":
    main()
