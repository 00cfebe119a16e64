"""Rule-based baselines that trade through the same `Agent` protocol as LLM agents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tradebench.agents.protocol import AGENTS, Decision, StepInfo
from tradebench.agents.sizing import Rounding, rebalance_columns
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action
from tradebench.view import MarketView


def tradable_members(view: MarketView) -> np.ndarray:
    """Columns in today's universe that traded on T-1 (a price and no suspension)."""
    close = view.last("close")
    return np.flatnonzero(view.member_mask() & np.isfinite(close) & ~view.last("suspended"))


def is_rebalance_day(view: MarketView, account: AccountSnapshot, every: int) -> bool:
    """Stateless schedule: every `every` trading days on the calendar, or when all cash."""
    return view.t % max(every, 1) == 0 or not account.symbols


class Sizing(Protocol):
    """How a baseline sizes its targets."""

    lot_size: int
    cash_buffer: float
    rounding: Rounding


def equal_weight_decision(
    view: MarketView, account: AccountSnapshot, cols: np.ndarray, sizing: Sizing, why: str
) -> Decision:
    """Orders that hold `cols` at (1 - cash buffer) / n each; no orders for no columns."""
    if cols.size == 0:
        return Decision(action=Action())
    weights = np.full(cols.size, (1.0 - sizing.cash_buffer) / cols.size)
    orders = rebalance_columns(cols, weights, view, account, sizing.lot_size, sizing.rounding)
    return Decision(action=Action(orders=orders, overall_reason=why))


@dataclass
class CashAgent:
    """Never trades: the zero-risk, zero-return reference."""

    name: str = "cash"

    async def decide(
        self, view: MarketView, account: AccountSnapshot, step: StepInfo | None = None
    ) -> Decision:
        """Always abstain."""
        return Decision(action=Action(orders=[], overall_reason="cash baseline holds cash"))


@dataclass
class EqualWeightAgent:
    """Equal weights over the point-in-time universe, rebalanced every `every` days."""

    every: int = 5
    lot_size: int = 100
    cash_buffer: float = 0.02
    rounding: Rounding = "nearest"
    name: str = "equal_weight"

    async def decide(
        self, view: MarketView, account: AccountSnapshot, step: StepInfo | None = None
    ) -> Decision:
        """Target (1 - buffer) / n in each tradable member on rebalance days."""
        if not is_rebalance_day(view, account, self.every):
            return Decision(action=Action())
        cols = tradable_members(view)
        return equal_weight_decision(view, account, cols, self, "equal-weight rebalance")


@dataclass
class MomentumTopKAgent:
    """Top-k members by trailing adjusted return, equal-weighted, rebalanced every `every`."""

    k: int = 20
    lookback: int = 20
    every: int = 5
    lot_size: int = 100
    cash_buffer: float = 0.02
    rounding: Rounding = "nearest"
    name: str = "momentum_topk"

    async def decide(
        self, view: MarketView, account: AccountSnapshot, step: StepInfo | None = None
    ) -> Decision:
        """Hold the k members with the highest `lookback`-day return (ties by symbol)."""
        if not is_rebalance_day(view, account, self.every):
            return Decision(action=Action())
        adj = view.window("adj_close", self.lookback + 1)
        if adj.shape[0] < self.lookback + 1:
            return Decision(action=Action())
        cols = tradable_members(view)
        ret = adj[-1, cols] / adj[0, cols] - 1.0
        ok = np.isfinite(ret)
        cols, ret = cols[ok], ret[ok]
        top = cols[np.lexsort((view.symbols[cols].astype(str), -ret))[: self.k]]
        return equal_weight_decision(view, account, top, self, "momentum top-k rebalance")


@AGENTS.register("cash")
def _cash() -> CashAgent:
    return CashAgent()


@AGENTS.register("equal_weight")
def _equal_weight(
    every: int = 5, lot_size: int = 100, cash_buffer: float = 0.02, rounding: Rounding = "nearest"
) -> EqualWeightAgent:
    return EqualWeightAgent(every, lot_size, cash_buffer, rounding)


@AGENTS.register("momentum_topk")
def _momentum(
    k: int = 20,
    lookback: int = 20,
    every: int = 5,
    lot_size: int = 100,
    cash_buffer: float = 0.02,
    rounding: Rounding = "nearest",
) -> MomentumTopKAgent:
    return MomentumTopKAgent(k, lookback, every, lot_size, cash_buffer, rounding)
