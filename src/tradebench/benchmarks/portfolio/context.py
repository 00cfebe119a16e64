"""What the research tools and observation builders of one step may read.

Everything comes from the point-in-time `MarketView` at T and the account at T-1's close;
features are computed once per step and shared by every tool call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from tradebench.benchmarks.portfolio.shown import PriceMode, PriceScale
from tradebench.features.technical import FeatureTable
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.rules import MarketRules
from tradebench.view import MarketView

__all__ = ["PriceMode", "PriceScale", "ShownPosition", "StepContext"]


class ShownPosition(NamedTuple):
    """A holding as the model reads it (through the step's `PriceScale`)."""

    symbol: str
    col: int
    """Its column in the view (-1: the dataset lacks it)."""
    shares: float | int | None
    sellable: float | int | None
    weight: float | None
    close: float | None


@dataclass
class StepContext:
    """One decision step's read-only world (real identifiers; masking happens outside).

    Attributes:
        view: the point-in-time view at T.
        account: the account at T-1's close.
        rules: the market rules orders will face.
        price_mode: `raw` shows real price levels; `rebased` shows each symbol's prices
            relative to 100 at `rebase_day` (the last visible day before the episode) and
            its quantities in rebased units; `scale` is the one converter.
        rebase_close: (N,) raw closes at the rebase day (NaN where unknown).
    """

    view: MarketView
    account: AccountSnapshot
    rules: MarketRules
    price_mode: PriceMode = "raw"
    rebase_close: np.ndarray | None = None
    _features: dict[str, np.ndarray] | None = field(default=None, repr=False)

    @cached_property
    def features(self) -> FeatureTable:
        """Technical features at T, each computed once per step when first read: for every
        column (`features[name]`) or for the few columns a tool shows (`features.rows`)."""
        return FeatureTable(self.view)

    @cached_property
    def universe(self) -> np.ndarray:
        """Columns of today's universe."""
        return np.flatnonzero(self.view.member_mask())

    @cached_property
    def universe_set(self) -> frozenset[str]:
        """Symbols of today's universe."""
        return frozenset(self.view.symbols[self.universe].tolist())

    @cached_property
    def scale(self) -> PriceScale:
        """The step's one converter of price levels and quantities (`shown.PriceScale`)."""
        return PriceScale(self.price_mode, self.rebase_close, self.rules.initial_cash)

    @cached_property
    def shown_positions(self) -> tuple[ShownPosition, ...]:
        """The holdings as shown, in the account's (symbol) order: the user message and
        the portfolio tool show the same numbers, converted once per step."""
        a, columns = self.account, self.view.column_map
        cols = [columns.get(s, -1) for s in a.symbols]
        shown = self.scale.holdings(
            cols, a.shares.tolist(), a.available.tolist(), a.weight.tolist(), a.close.tolist()
        )
        return tuple(
            ShownPosition(symbol, col, *values)
            for symbol, col, values in zip(a.symbols, cols, shown, strict=True)
        )

    def held(self) -> dict[str, int]:
        """Symbol -> shares held at T-1's close."""
        return {p.symbol: p.shares for p in self.account.positions}
