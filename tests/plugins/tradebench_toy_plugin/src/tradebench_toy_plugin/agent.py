"""`toy_plugin_first_n`: buy the first `n` tradable members by symbol, equally weighted, on
the first day, and hold them (an `Agent` of tradebench's documented protocol)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tradebench.agents.protocol import Decision, StepInfo
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action, Order
from tradebench.view import MarketView


def first_tradable(view: MarketView, n: int) -> list[tuple[str, float]]:
    """The first `n` members by symbol that have a price on T-1 and are not suspended, each
    with T-1's close."""
    close = view.last("close")
    ok = view.member_mask() & np.isfinite(close) & ~view.last("suspended")
    cols = sorted(np.flatnonzero(ok), key=lambda c: str(view.symbols[c]))[:n]
    return [(str(view.symbols[c]), float(close[c])) for c in cols]


@dataclass
class FirstNAgent:
    """Equal weights in the first `n` symbols, bought once with (1 - `cash_buffer`) of NAV.

    Attributes:
        n: how many symbols to hold.
        lot_size: the market's board lot (the harness passes it; shares are whole lots).
        cash_buffer: share of NAV left in cash for fees and the open's gap.
    """

    n: int = 3
    lot_size: int = 100
    cash_buffer: float = 0.05
    name: str = "toy_plugin_first_n"

    async def decide(self, view: MarketView, account: AccountSnapshot, step: StepInfo) -> Decision:
        """Buy on the first step (or whenever the account holds nothing); hold otherwise."""
        if account.symbols:
            return Decision(action=Action(overall_reason="holding the first symbols"))
        picks = first_tradable(view, self.n)
        budget = account.nav * (1.0 - self.cash_buffer) / max(len(picks), 1)
        orders = []
        for symbol, price in picks:
            lots = math.floor(budget / (price * self.lot_size)) if price > 0 else 0
            if lots > 0:
                orders.append(Order(stock_id=symbol, side="BUY", shares=lots * self.lot_size))
        return Decision(action=Action(orders=orders, overall_reason=f"first {self.n} symbols"))
