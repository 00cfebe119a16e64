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
raw price back. Quantities the model writes (an order's `shares`) are read as units and
turned back into real shares here (`shares`), rounded down to whole lots.

Every field that carries a price level or a quantity of a stock asks `PriceScale`; the
engine's ledger is never touched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tradebench.market.orders import OrderRecord, RejectCode

PriceMode = Literal["raw", "rebased"]
REBASE_LEVEL = 100.0
"""A rebased price on the rebase day."""
PRICE_DIGITS = 3
UNIT_DIGITS = 2
UNITS_NOTE = (
    "prices are rebased to 100 at the close before the episode, and every share count you "
    "read or write (holdings, sellable, fills, volume, an order's shares) is in rebased "
    "units: a rebased price times units is the value in cash; orders in units are rounded "
    "down to whole lots"
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
    RejectCode.LOT_SIZE: "not a whole number of lots",
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
    """

    mode: PriceMode = "raw"
    base: np.ndarray | None = None

    @property
    def hides_levels(self) -> bool:
        """Whether levels are shown in the rebased frame."""
        return self.mode == "rebased"

    def _base(self, col: int) -> float | None:
        if self.base is None or col < 0:
            return None
        value = float(self.base[col])
        return value if np.isfinite(value) and value > 0 else None

    def price(self, col: int, value: float) -> float | None:
        """A raw price as shown (rebased when levels are hidden), rounded; None if unknown."""
        if not np.isfinite(value):
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
            if not np.isfinite(close):
                return None, None
            return self.price(col, round(close * (1 + pct), 2)), self.price(
                col, round(close * (1 - pct), 2)
            )
        shown = self.price(col, close)
        if shown is None:
            return None, None
        return round(shown * (1 + pct), PRICE_DIGITS), round(shown * (1 - pct), PRICE_DIGITS)

    def quantity(self, col: int, shares: float) -> float | int | None:
        """A quantity of one stock as shown: shares under `raw`, rebased units otherwise."""
        if not self.hides_levels:
            return int(shares) if float(shares).is_integer() else float(shares)
        base = self._base(col)
        if base is None or not np.isfinite(shares):
            return None
        return round(float(shares) * base / REBASE_LEVEL, UNIT_DIGITS)

    def shares(self, col: int, quantity: float, lot: int, held: int = 0) -> int:
        """The real shares of a quantity the model wrote. Raw: as written. Rebased: the
        units in shares, rounded down to whole lots, except that at least the shown size of
        the holding (`held` > 0) means all of it; 0 when the stock has no rebase close."""
        if not self.hides_levels:
            return int(quantity)
        base = self._base(col)
        if base is None:
            return 0
        if held > 0 and quantity >= (self.quantity(col, held) or math.inf):
            return held
        exact = quantity * REBASE_LEVEL / base
        return math.floor(exact / lot + 1e-9) * lot

    def note(self, record: OrderRecord) -> str:
        """The broker's message on a record as the model reads it: as written under `raw`,
        the record's code in words under `rebased` (see `OUTCOME_TEXT`)."""
        if not self.hides_levels:
            return record.message
        return "" if record.reject_code is None else OUTCOME_TEXT[record.reject_code]
