"""The mandate's target weights as an agent of the broker engine's one day loop.

A `Decider` plans a day's target weights before the open (None: hold) and what to record
with the day. `TargetAgent` is the adapter (as Qlib's strategies turn a target position
into orders): it turns the targets into SELL-then-BUY target-weight orders and hands them
to `runs.broker.engine.run_backtest`, which fills them at the open under explicit
`MarketRules` (US rules, the options' half-spread and commission), credits dividends and
distributions, marks at the close, journals the day (the plan's record under the line's
`mandate` key, so a killed episode resumes after its last day) and fills the order
outcomes. `run_targets` runs a decider over a slice of trading days; the cost curve and
the references re-run it on recorded or fixed targets (`FixedTargets`) without a journal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from tradebench.agents.protocol import Decision, StepInfo
from tradebench.data.dataset import Dataset
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action, Order
from tradebench.market.rules import MarketRules
from tradebench.runs.broker.engine import BacktestResult, run_backtest
from tradebench.runs.journal import Journal
from tradebench.view import MarketView

WEIGHT_EPS = 1e-9
"""Target weights at or below this are treated as zero."""
JOURNAL_KEY = "mandate"
"""The journal line's key of a day's plan record."""


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
    """A finished episode: the broker tables and each step's record (`targets` and the
    decider's `info`)."""

    result: BacktestResult
    infos: list[dict[str, Any]]


def last_closes(view: MarketView, names: Sequence[str]) -> dict[str, float]:
    """Each name's last raw close before T (a day without a close keeps the one before, as
    the broker marks a holding); NaN for a name without any."""
    closes = view.window("close")
    out = {}
    for name in names:
        col = view.column(name)
        series = closes[:, col] if col >= 0 else np.empty(0)
        finite = series[np.isfinite(series)]
        out[name] = float(finite[-1]) if finite.size else math.nan
    return out


def rebalance_orders(
    targets: Mapping[str, float],
    account: AccountSnapshot,
    prev_close: Mapping[str, float],
    lot: int = 1,
) -> list[Order]:
    """Target-weight orders that move the account to `targets`: SELLs (sorted) first, then
    BUYs in target order; names whose whole-lot target equals the holding get none, and so
    does a name without a positive close at T-1 (`prev_close`).

    Uses the broker's conversion (weight x NAV at T-1 / close at T-1, whole lots).
    """
    held = {p.symbol: p.shares for p in account.positions}
    sells, buys = [], []
    names = list(targets) + sorted(set(held) - set(targets))
    for name in names:
        w = float(targets.get(name, 0.0))
        w = 0.0 if w <= WEIGHT_EPS else min(w, 1.0)
        price = prev_close.get(name, math.nan)
        if not price > 0:
            continue
        want = math.floor(w * account.nav / price / lot) * lot
        have = held.get(name, 0)
        if want < have:
            sells.append(Order(stock_id=name, side="SELL", target_weight=w))
        elif want > have:
            buys.append(Order(stock_id=name, side="BUY", target_weight=w))
    return sorted(sells, key=lambda o: o.stock_id) + buys


@dataclass
class TargetAgent:
    """A `Decider` as the engine's `Agent` and `StepExtras`: each day's targets become
    orders, and each day's record is journaled under `JOURNAL_KEY` and read back on a
    rerun (`infos`, one per completed day)."""

    decider: Decider
    lot: int = 1
    name: str = "targets"
    infos: list[dict[str, Any]] = field(default_factory=list)

    async def decide(self, view: MarketView, account: AccountSnapshot, step: StepInfo) -> Decision:
        """The decider's plan of the day as orders (none when it holds)."""
        plan = await self.decider.plan(view, account, step.index - 1)
        orders: list[Order] = []
        if plan.targets is not None:
            names = list(plan.targets) + [p.symbol for p in account.positions]
            prices = last_closes(view, names)
            orders = rebalance_orders(plan.targets, account, prices, self.lot)
        self.infos.append({"targets": plan.targets, **plan.info})
        return replace(plan.decision, action=Action(orders=orders), sent_ids=None, trace=plan.trace)

    def resume(self, lines: list[dict[str, Any]]) -> None:
        """The records of a rerun's completed days, from their journal lines."""
        self.infos = [line.get(JOURNAL_KEY, {}) for line in lines]

    def fields(self, index: int) -> dict[str, Any]:
        """Day `index`'s record for its journal line."""
        return {JOURNAL_KEY: self.infos[index]}


async def run_targets(
    dataset: Dataset,
    decider: Decider,
    days: np.ndarray,
    rules: MarketRules,
    universe: frozenset[str],
    journal: Journal | None = None,
    on_step: Callable[[], None] | None = None,
) -> Simulation:
    """Run `decider` over the consecutive trading days `days` (calendar positions) through
    the engine's day loop, resuming `journal` when given; BUYs may name only `universe`."""
    dates = dataset.panel.dates
    agent = TargetAgent(decider, rules.lot_size)
    result = await run_backtest(
        dataset,
        agent,
        str(dates[days[0]]),
        str(dates[days[-1]]),
        rules,
        (lambda i, n: on_step()) if on_step is not None else None,
        journal,
        universe,
        agent,
    )
    return Simulation(result, agent.infos)
