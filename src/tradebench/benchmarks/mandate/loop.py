"""The mandate day loop: plan target weights before the open, trade to them at the open.

The same broker as every benchmark (`market.broker`) under explicit `MarketRules` (US
rules, the half-spread and commission of the options). A `Decider` returns the step's
target weights (None: hold, no orders) and what to journal with the step; the loop turns
targets into SELL-then-BUY target-weight orders, executes them, marks at the close and
writes one journal line per day, so a killed episode resumes after its last day. The
cost-sensitivity curve and the equal-weight reference re-run this loop on recorded or
fixed targets without a journal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from tradebench.agents.protocol import Decision
from tradebench.data.dataset import Dataset
from tradebench.market.broker import ExecutionContext, execute_orders
from tradebench.market.distributions import distribute
from tradebench.market.ledger import Account, AccountSnapshot
from tradebench.market.orders import Action, Order, OrderRecord
from tradebench.market.rules import MarketRules
from tradebench.runs.broker.engine import (
    BacktestResult,
    day_quotes,
    journal_line,
    order_row,
    position_block,
    restore,
)
from tradebench.runs.journal import Journal
from tradebench.runs.broker.rows import OrderRow, StepRow, fault_values, positions_frame, rows_frame
from tradebench.view import MarketView

WEIGHT_EPS = 1e-9
"""Target weights at or below this are treated as zero."""


@dataclass(frozen=True)
class StepPlan:
    """One day's plan: target weights (None = hold) and what to record with the step."""

    targets: dict[str, float] | None
    info: dict[str, Any] = field(default_factory=dict)
    """JSON-able step record, journaled with the targets (`Simulation.infos`)."""
    decision: Decision = field(default_factory=lambda: Decision(action=Action()))
    """Model diagnostics (tokens, retries, fallback); defaults for rule deciders."""
    trace: dict[str, Any] | None = None
    """The model conversation of the step (`trace.jsonl`), None for rule deciders."""


class Decider(Protocol):
    """Plans target weights before T's open from the view and the account at T-1."""

    async def plan(self, view: MarketView, account: AccountSnapshot, index: int) -> StepPlan:
        """The plan of step `index` (0-based)."""
        ...


@dataclass(frozen=True)
class FixedTargets:
    """Targets from a list (index -> targets or None): references and replays."""

    targets: Sequence[dict[str, float] | None]

    async def plan(self, view: MarketView, account: AccountSnapshot, index: int) -> StepPlan:
        """The recorded targets of step `index` (hold beyond the list)."""
        return StepPlan(self.targets[index] if index < len(self.targets) else None)


@dataclass(frozen=True)
class Simulation:
    """A finished loop: the broker tables and each step's `info`."""

    result: BacktestResult
    infos: list[dict[str, Any]]


def rebalance_orders(
    targets: Mapping[str, float],
    account: AccountSnapshot,
    prev_close: np.ndarray,
    column: Mapping[str, int],
    lot: int = 1,
) -> list[Order]:
    """Target-weight orders that move the account to `targets`: SELLs (sorted) first, then
    BUYs in target order; names whose whole-lot target equals the holding get none.

    Uses the broker's conversion (weight x NAV at T-1 / close at T-1, whole lots).
    """
    held = {p.symbol: p.shares for p in account.positions}
    sells, buys = [], []
    names = list(targets) + sorted(set(held) - set(targets))
    for name in names:
        w = float(targets.get(name, 0.0))
        w = 0.0 if w <= WEIGHT_EPS else min(w, 1.0)
        price = float(prev_close[column[name]])
        if not price > 0:
            continue
        want = math.floor(w * account.nav / price / lot) * lot
        have = held.get(name, 0)
        if want < have:
            sells.append(Order(stock_id=name, side="SELL", target_weight=w))
        elif want > have:
            buys.append(Order(stock_id=name, side="BUY", target_weight=w))
    return sorted(sells, key=lambda o: o.stock_id) + buys


def _step_row(
    day: pd.Timestamp,
    account: Account,
    nav: float,
    bench: float,
    records: list[OrderRecord],
    nav_prev: float,
    d: Decision,
) -> StepRow:
    traded = sum(r.filled_shares * (r.fill_price or 0.0) for r in records)
    return StepRow(
        date=day,
        nav=nav,
        cash=account.cash,
        benchmark_close=bench,
        n_orders=len(records),
        n_rejected=sum(r.status == "rejected" for r in records),
        turnover=traded / nav_prev if nav_prev > 0 else 0.0,
        parse_failures=d.parse_failures,
        tool_calls=d.tool_calls,
        tool_calls_valid=d.tool_calls_valid,
        retries=d.retries,
        tokens_in=d.tokens_in,
        tokens_out=d.tokens_out,
        cost_usd=d.cost_usd,
        fallback=d.fallback,
        research_cap_hit=d.research_cap_hit,
        **fault_values(d.faults),
    )


async def simulate(
    dataset: Dataset,
    decider: Decider,
    days: np.ndarray,
    rules: MarketRules,
    universe: frozenset[str],
    journal: Journal | None = None,
    on_step: Callable[[], None] | None = None,
) -> Simulation:
    """Run `decider` over the calendar positions `days` (resuming `journal` when given)."""
    panel = dataset.panel
    column = panel.column_map
    marks = pd.DataFrame(panel.fields["close"]).ffill().to_numpy()
    bench = panel.index["close"]
    state = restore(journal)
    infos = [line.get("mandate", {}) for line in state.lines]
    account = state.account or Account(rules.initial_cash)
    steps, positions, orders = state.steps, state.positions, state.orders
    for i in range(state.steps_done, len(days)):
        t = days[i]
        account.unlock()
        view = MarketView(dataset, panel.dates[t])
        snapshot = account.snapshot(marks[t - 1], column)
        plan = await decider.plan(view, snapshot, i)
        factors = panel.fields["adj_factor"]
        distribute(account, factors[t - 1], factors[t], marks[t - 1], column)
        wanted = (
            []
            if plan.targets is None
            else rebalance_orders(plan.targets, snapshot, marks[t - 1], column, rules.lot_size)
        )
        ctx = ExecutionContext(rules=rules, nav_prev=snapshot.nav, universe=universe)
        records = execute_orders(wanted, account, day_quotes(panel, t, marks), ctx)
        day = pd.Timestamp(panel.dates[t])
        nav = account.nav(marks[t], column)
        step = _step_row(day, account, nav, float(bench[t]), records, snapshot.nav, plan.decision)
        held = position_block(day, account, marks[t], dict(column))
        rows = [order_row(day, r) for r in records]
        info = {"targets": plan.targets, **plan.info}
        if journal is not None:
            line = journal_line(step, held, rows, account, records) | {"mandate": info}
            journal.append(i, line, plan.trace)
        steps.append(step)
        positions.append(held)
        orders += rows
        infos.append(info)
        if on_step is not None:
            on_step()
    base = float(bench[days[0] - 1])
    result = BacktestResult(
        steps=rows_frame(steps, StepRow),
        positions=positions_frame(positions),
        orders=rows_frame(orders, OrderRow),
        initial_cash=rules.initial_cash,
        benchmark_start=base if np.isfinite(base) else None,
    )
    return Simulation(result, infos)
