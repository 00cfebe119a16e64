"""The one converter between the real ledger and the levels a model reads.

Under `raw` prices the model reads what the engine holds: prices in the currency, share
counts, volumes in shares. Under `rebased` prices no level may name a stock, so every
number tied to a stock's price level is shown in that stock's rebased frame:

- a price is `100 x price / base`, base being the stock's raw close on the rebase day (the
  last visible day before the episode);
- a quantity (a holding, a fill, a sellable amount, a day's volume) is in rebased units,
  `shares x base / 100`, so that a rebased price times units is the real value.

Money (cash, NAV, costs, values) stays in the currency: with both conversions every value
the model can form (price x units, cost / value, NAV x weight / units, a cash change over
the units filled) agrees with the real ledger, and no ratio of two numbers shown gives a
raw price back.

**The account grid.** The lot rule is a second channel: a real holding is a whole number of
lots, so in rebased units it is a whole multiple of `base` (one lot of 100 shares is `base`
units), and the smallest order the broker fills is one lot. Read off holdings, or stepped
through order sizes in `risk_check`, that multiple is the raw price. Under `rebased` prices
every amount the model reads or writes therefore lies on one grid, `ACCOUNT_GRID` of the
initial capital: money rounded to the grid, weights to `ACCOUNT_GRID`, quantities to the
units one grid step buys at the rebase close (`unit_step`), and an order's size read on the
same grid (smaller than one step: refused, the same for every stock). Where one lot is worth
under half a grid step (`lot_hidden`) the rounding to lots never moves a shown number, so
lots cannot be seen; a stock whose lot is worth more keeps its lot visible (the book is too
small for it): `lot_visible_share` counts such stocks so that runs and reports can say so,
and docs/portfolio.md gives the capital that closes the channel.

Every field that carries a price level, a quantity of a stock or an amount of money asks
`PriceScale`; the engine's ledger is never touched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from tradebench.market.orders import OrderRecord, RejectCode

PriceMode = Literal["raw", "rebased"]
REBASE_LEVEL = 100.0
"""A rebased price on the rebase day."""
PRICE_DIGITS = 3
UNIT_DIGITS = 2
ACCOUNT_GRID = 0.001
"""The account grid under rebased prices, as a share of the initial capital (0.1%)."""
UNITS_NOTE = (
    "prices are rebased to 100 at the close before the episode, and every share count you "
    "read or write (holdings, sellable, fills, volume, an order's shares) is in rebased "
    "units: a rebased price times units is the value in cash; amounts of cash and units "
    "are rounded to a grid of 0.1% of the initial capital, weights to 0.1%, and an order "
    "smaller than one grid step is refused"
)
"""How the rebased frame is explained to the model (the account text and the state)."""
OUTCOME_TEXT = {
    RejectCode.NOT_IN_UNIVERSE: "not in today's universe",
    RejectCode.NO_POSITION: "no position to sell",
    RejectCode.T1_LOCKED: "shares bought today are not sellable until tomorrow (T+1)",
    RejectCode.LIMIT_UP: "the stock is at its limit-up price",
    RejectCode.LIMIT_DOWN: "the stock is at its limit-down price",
    RejectCode.ONE_SIDED: "the stock traded at a single limit price all day",
    RejectCode.SUSPENDED: "the stock is suspended today",
    RejectCode.INSUFFICIENT_CASH: "not enough cash",
    RejectCode.LOT_SIZE: "less than the smallest order (one grid step and one lot)",
    RejectCode.INVALID_ORDER: (
        "the order cannot be executed as sized (a target weight not beyond the current one, "
        "or more than is held)"
    ),
}
"""A broker record's code in words, for the rebased frame: the broker's own messages quote
real share counts, which next to units would give the rebase close back."""


@dataclass(frozen=True)
class PriceScale:
    """Real levels to shown levels and back, for one step.

    Attributes:
        mode: `raw` or `rebased`.
        base: (N,) raw closes on the rebase day (None under `raw`; NaN where unknown).
        capital: the initial capital in the currency; under `rebased` the account grid is
            `ACCOUNT_GRID` of it.
    """

    mode: PriceMode = "raw"
    base: np.ndarray | None = None
    capital: float = 1_000_000.0

    @cached_property
    def grid(self) -> float:
        """One step of the account grid in the currency (`ACCOUNT_GRID` x the capital)."""
        return ACCOUNT_GRID * self.capital

    @cached_property
    def unit_step(self) -> float:
        """The rebased units one grid step buys at the rebase close (units x 100 is the
        value at that close)."""
        return self.grid / REBASE_LEVEL

    @cached_property
    def hides_levels(self) -> bool:
        """Whether levels are shown in the rebased frame."""
        return self.mode == "rebased"

    @cached_property
    def _bases(self) -> list[float] | None:
        """`base` as Python floats (read once per step, then per field shown)."""
        return None if self.base is None else self.base.tolist()

    def _base(self, col: int) -> float | None:
        bases = self._bases
        if bases is None or col < 0:
            return None
        value = float(bases[col])
        return value if math.isfinite(value) and value > 0 else None

    def price(self, col: int, value: float) -> float | None:
        """A raw price as shown (rebased when levels are hidden), rounded; None if unknown."""
        if not math.isfinite(value):
            return None
        if not self.hides_levels:
            return round(float(value), PRICE_DIGITS)
        base = self._base(col)
        return None if base is None else round(float(value) / base * REBASE_LEVEL, PRICE_DIGITS)

    def limit_prices(self, col: int, close: float, pct: float) -> tuple[float | None, float | None]:
        """Next day's limit-up and limit-down prices as shown. Raw: the exchange's prices,
        on the 0.01 price tick. Rebased: the shown close moved by the limit, with no tick
        (the tick is a grid of raw prices: rounding to it would place the raw level)."""
        if not self.hides_levels:
            if not math.isfinite(close):
                return None, None
            return self.price(col, round(close * (1 + pct), 2)), self.price(
                col, round(close * (1 - pct), 2)
            )
        shown = self.price(col, close)
        if shown is None:
            return None, None
        return round(shown * (1 + pct), PRICE_DIGITS), round(shown * (1 - pct), PRICE_DIGITS)

    def money(self, value: float) -> float | None:
        """An amount of money as shown: cents under `raw`, on the account grid otherwise."""
        if not math.isfinite(value):
            return None
        if not self.hides_levels:
            return round(float(value), 2)
        return round(_on_grid(float(value), self.grid), 2)

    def weight(self, value: float, digits: int = 4) -> float | None:
        """A weight (a share of NAV) as shown: `digits` decimals under `raw`, on the grid
        (`ACCOUNT_GRID`) otherwise."""
        if not math.isfinite(value):
            return None
        if not self.hides_levels:
            return round(float(value), digits)
        return round(_on_grid(float(value), ACCOUNT_GRID), 6)

    @cached_property
    def _shown(self) -> dict[tuple[int, int], float | int | None]:
        """Quantities of whole shares already shown this step, by (column, shares): the
        account text and the portfolio tool show the same holdings."""
        return {}

    def quantity(self, col: int, shares: float) -> float | int | None:
        """A quantity of one stock as shown: shares under `raw`, rebased units on the grid
        (`unit_step`) otherwise."""
        if type(shares) is not int:
            return self._quantity(col, shares)
        shown = self._shown
        key = (col, shares)
        if key not in shown:
            shown[key] = self._quantity(col, shares)
        return shown[key]

    def _quantity(self, col: int, shares: float) -> float | int | None:
        if not self.hides_levels:
            return int(shares) if float(shares).is_integer() else float(shares)
        base = self._base(col)
        if base is None or not math.isfinite(shares):
            return None
        units = _on_grid(float(shares) * base / REBASE_LEVEL, self.unit_step)
        return round(units, UNIT_DIGITS)

    def holdings(
        self,
        cols: list[int],
        shares: list[int],
        available: list[int],
        weights: list[float],
        closes: list[float],
    ) -> list[tuple[float | int | None, float | int | None, float | None, float | None]]:
        """(`quantity` of the shares, of the sellable shares, `weight`, `price` of the close)
        of each holding (whole shares; column -1 where unknown): under `rebased` in array
        passes, the same numbers as field by field."""
        if not self.hides_levels or self.base is None:
            return [
                (self.quantity(c, s), self.quantity(c, a), self.weight(w), self.price(c, x))
                for c, s, a, w, x in zip(cols, shares, available, weights, closes, strict=True)
            ]
        if not cols:
            return []
        idx = np.asarray(cols, dtype=np.intp)
        base = np.where(idx >= 0, self.base[np.maximum(idx, 0)], np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = np.isfinite(base) & (base > 0)
            known = ok.tolist()
            step = self.unit_step
            held = _grid(np.asarray(shares, dtype=float) * base / REBASE_LEVEL, step)
            free = _grid(np.asarray(available, dtype=float) * base / REBASE_LEVEL, step)
            w = np.asarray(weights, dtype=float)
            x = np.asarray(closes, dtype=float)
            close = x / base * REBASE_LEVEL
        return list(
            zip(
                _rounded(held, UNIT_DIGITS, known),
                _rounded(free, UNIT_DIGITS, known),
                _rounded(_grid(w, ACCOUNT_GRID), 6, np.isfinite(w).tolist()),
                _rounded(close, PRICE_DIGITS, (np.isfinite(x) & ok).tolist()),
                strict=True,
            )
        )

    def lot_hidden(self, col: int, lot: int) -> bool:
        """Whether one lot of the stock, at its rebase close, is worth under half a grid
        step, so that rounding to lots never shows (always True under `raw`, where nothing
        is hidden by the grid)."""
        if not self.hides_levels:
            return True
        base = self._base(col)
        return base is None or base * lot < self.grid / 2

    def lot_visible_share(self, cols: np.ndarray, lot: int) -> float:
        """The share of `cols` whose lot the grid cannot hide (0 under `raw`)."""
        if not self.hides_levels or self.base is None or len(cols) == 0:
            return 0.0
        base = self.base[np.asarray(cols, dtype=int)]
        return float(np.mean(np.isfinite(base) & (base * lot >= self.grid / 2)))

    def target_weight(self, value: float) -> float:
        """A target weight the model wrote as the broker reads it: as written under `raw`,
        on the grid (`ACCOUNT_GRID`) otherwise, so that weights cannot be tuned finer than
        the grid to find where a lot boundary falls."""
        if not self.hides_levels:
            return float(value)
        return _on_grid(float(value), ACCOUNT_GRID)

    @property
    def too_small(self) -> str:
        """Why an order's size comes to no shares, in words that name no level."""
        if not self.hides_levels:
            return "shares come to less than one lot"
        return "shares come to less than the smallest order (one grid step and one lot)"

    def shares(self, col: int, quantity: float, lot: int, held: int = 0) -> int:
        """The real shares of a quantity the model wrote. Raw: as written. Rebased: the
        units read on the grid (`unit_step`; under one step is 0), in shares, rounded down
        to whole lots, except that at least the shown size of the holding (`held` > 0)
        means all of it; 0 when the stock has no rebase close."""
        if not self.hides_levels:
            return int(quantity)
        base = self._base(col)
        if base is None:
            return 0
        if held > 0 and quantity >= (self.quantity(col, held) or math.inf):
            return held
        units = _on_grid(float(quantity), self.unit_step)
        exact = units * REBASE_LEVEL / base
        return math.floor(exact / lot + 1e-9) * lot

    def note(self, record: OrderRecord) -> str:
        """The broker's message on a record as the model reads it: as written under `raw`,
        the record's code in words under `rebased` (see `OUTCOME_TEXT`)."""
        if not self.hides_levels:
            return record.message
        return "" if record.reject_code is None else OUTCOME_TEXT[record.reject_code]


@dataclass(frozen=True)
class LotExposure:
    """How far an episode's account grid hides lots (rebased prices only).

    Attributes:
        visible_share: the share of the universe whose lot, at the rebase close, is worth at
            least half a grid step, so that its lot (and its raw price) can be read.
        capital_to_hide: the smallest initial capital whose grid hides every lot.
    """

    visible_share: float
    capital_to_hide: float


def lot_exposure(base: np.ndarray, lot: int, capital: float) -> LotExposure:
    """The `LotExposure` of universe stocks whose rebase closes are `base`."""
    base = np.asarray(base, dtype=float)
    base = base[np.isfinite(base) & (base > 0)]
    if base.size == 0:
        return LotExposure(0.0, 0.0)
    scale = PriceScale("rebased", base, capital)
    visible = scale.lot_visible_share(np.arange(base.size), lot)
    return LotExposure(visible, float(2 * base.max() * lot / ACCOUNT_GRID))


def _grid(values: np.ndarray, step: float) -> np.ndarray:
    """`_on_grid` of each value: the same IEEE operations in the same order."""
    with np.errstate(invalid="ignore"):
        return np.copysign(np.floor(np.abs(values) / step + 0.5) * step, values)


def _rounded(values: np.ndarray, digits: int, keep: list[bool]) -> list[float | None]:
    """Python's `round` of each value (numpy's rounds differently), None where not `keep`."""
    return [round(v, digits) if k else None for v, k in zip(values.tolist(), keep, strict=True)]


def _on_grid(value: float, step: float) -> float:
    """`value` rounded to the nearest multiple of `step` (half away from zero)."""
    return math.copysign(math.floor(abs(value) / step + 0.5) * step, value)
