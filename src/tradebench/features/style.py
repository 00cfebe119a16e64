"""Nine style factors for return attribution, computed strictly from data before day t.

Raw factor row s uses input rows <= s only (trailing windows, `features.rolling`); the
exposure an attribution uses on day t is row t-1, winsorised and standardised across the
day's universe. Definitions and windows: `docs/attribution.md`.

Where a dataset has no traded amount (the real CSI300 file), it is estimated as
volume x raw close and every result says so in `amount_source`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from tradebench.data.panel import Panel
from tradebench.features.rolling import (
    delay,
    rolling_corr,
    rolling_max,
    rolling_mean,
    rolling_skew,
    rolling_std,
    safe_div,
)
from tradebench.view import MarketView

STYLE_FACTORS = (
    "momentum",
    "high_52w",
    "reversal",
    "volatility",
    "liquidity",
    "amount_variability",
    "skewness",
    "intraday_momentum",
    "volume_return_corr",
)
"""Factor names, in display order."""
LOOKBACK = 253
"""Input rows the longest factor needs (252 daily moves for momentum and the 52-week high)."""
WEIGHT_DAYS = 20
"""Days of traded amount averaged for the regression weights (a size proxy)."""
AMOUNT_REPORTED = "reported"
AMOUNT_ESTIMATED = "estimated as volume x close (the dataset has no amount)"

__all__ = [
    "AMOUNT_ESTIMATED",
    "AMOUNT_REPORTED",
    "LOOKBACK",
    "STYLE_FACTORS",
    "WEIGHT_DAYS",
    "StyleExposures",
    "StyleInputs",
    "inputs_from_panel",
    "inputs_from_view",
    "member_masks",
    "raw_style_factors",
    "standardise",
    "style_exposures",
    "view_style_exposures",
    "winsorise",
]


@dataclass(frozen=True)
class StyleInputs:
    """(T, N) arrays the factors read, rows in calendar order.

    Attributes:
        adj_open, adj_close: adjusted prices (NaN where the symbol has no bar).
        volume: raw traded shares; amount: traded value (reported or estimated).
        tradable: a bar and no suspension on that row.
        amount_source: `AMOUNT_REPORTED`, `AMOUNT_ESTIMATED` or a mixed description.
    """

    adj_open: np.ndarray
    adj_close: np.ndarray
    volume: np.ndarray
    amount: np.ndarray
    tradable: np.ndarray
    amount_source: str


@dataclass(frozen=True)
class StyleExposures:
    """Winsorised, standardised exposures: `values[k, s, i]` for factor k, row s, column i.

    Row s uses input rows <= s; an attribution uses row t-1 on day t.
    """

    factors: tuple[str, ...]
    values: np.ndarray
    amount_source: str

    def factor(self, name: str) -> np.ndarray:
        """The (T, N) exposures of one factor."""
        return self.values[self.factors.index(name)]


def _amount(amount: np.ndarray, volume: np.ndarray, close: np.ndarray) -> tuple[np.ndarray, str]:
    """Reported amount where finite, else volume x raw close; plus where it came from."""
    reported = np.isfinite(amount)
    estimate = volume * close
    values = np.where(reported, amount, estimate)
    known = np.isfinite(values)
    share = float((~reported & known).sum()) / max(int(known.sum()), 1)
    if share == 0.0:
        return values, AMOUNT_REPORTED
    if share == 1.0:
        return values, AMOUNT_ESTIMATED
    return values, f"mixed: {share:.1%} of bars estimated as volume x close"


def _inputs(fields: dict[str, np.ndarray]) -> StyleInputs:
    amount, source = _amount(fields["amount"], fields["volume"], fields["close"])
    tradable = fields["listed"] & ~fields["suspended"]
    return StyleInputs(
        adj_open=fields["adj_open"],
        adj_close=fields["adj_close"],
        volume=fields["volume"],
        amount=amount,
        tradable=tradable,
        amount_source=source,
    )


_FIELDS = ("adj_open", "adj_close", "close", "volume", "amount", "listed", "suspended")


def inputs_from_panel(panel: Panel, start: int, stop: int) -> StyleInputs:
    """Inputs from panel rows [start, stop) (evaluation side: attribution of stored runs)."""
    source = {**panel.fields, **panel.adjusted, "listed": panel.listed}
    source["suspended"] = panel.suspended
    return _inputs({k: source[k][start:stop] for k in _FIELDS})


def inputs_from_view(view: MarketView, lookback: int = LOOKBACK) -> StyleInputs:
    """Inputs from the last `lookback` visible rows of a point-in-time view."""
    return _inputs({k: view.window(k, lookback) for k in _FIELDS})


def _returns(inputs: StyleInputs) -> np.ndarray:
    """Daily adjusted returns, NaN on rows (or after rows) without a tradable bar."""
    close = inputs.adj_close
    ok = inputs.tradable & delay(inputs.tradable.astype(float), 1).astype(bool)
    return np.where(ok, safe_div(close, delay(close, 1)) - 1.0, np.nan)


def raw_style_factors(inputs: StyleInputs) -> dict[str, np.ndarray]:
    """The nine raw factors, each (T, N); row s reads input rows <= s only."""
    with np.errstate(invalid="ignore", divide="ignore"):
        logp = np.log(inputs.adj_close)
        ret = _returns(inputs)
        amount = np.where(inputs.tradable & (inputs.amount > 0), inputs.amount, np.nan)
        vol = np.where(inputs.tradable & (inputs.volume > 0), inputs.volume, np.nan)
        dlogvol = np.log(vol) - np.log(delay(vol, 1))
        intraday = np.where(inputs.tradable, np.log(inputs.adj_close / inputs.adj_open), np.nan)
        mean_amount = rolling_mean(amount, 60, 40)
        return {
            "momentum": delay(logp, 21) - delay(logp, 252),
            "high_52w": inputs.adj_close / rolling_max(inputs.adj_close, 252, 200),
            "reversal": -(logp - delay(logp, 21)),
            "volatility": rolling_std(ret, 60, 40),
            "liquidity": np.log(mean_amount),
            "amount_variability": safe_div(rolling_std(amount, 60, 40), mean_amount),
            "skewness": rolling_skew(ret, 60, 40),
            "intraday_momentum": rolling_mean(intraday, 20, 15) * 20.0,
            "volume_return_corr": rolling_corr(ret, dlogvol, 20, 15),
        }


def _masked(values: np.ndarray, universe: np.ndarray) -> np.ndarray:
    return np.where(universe & np.isfinite(values), values, np.nan)


def _row_quantiles(masked: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `q` and `1 - q` quantiles (linear interpolation) over its finite values.

    One sort per row instead of `np.nanquantile`'s general path; NaN for empty rows.
    """
    ordered = np.sort(masked, axis=1)  # NaN sorts last
    count = np.isfinite(masked).sum(axis=1)
    rows = np.arange(masked.shape[0])
    out = []
    for level in (q, 1.0 - q):
        pos = level * np.maximum(count - 1, 0)
        below = np.floor(pos).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(count - 1, 0))
        frac = pos - below
        value = ordered[rows, below] * (1 - frac) + ordered[rows, above] * frac
        out.append(np.where(count > 0, value, np.nan))
    return out[0], out[1]


def winsorise(values: np.ndarray, universe: np.ndarray, q: float = 0.01) -> np.ndarray:
    """Clip each row at its universe's `q` and `1 - q` quantiles (NaN stays NaN)."""
    lo, hi = _row_quantiles(_masked(values, universe), q)
    return np.clip(values, lo[:, None], hi[:, None])


def standardise(values: np.ndarray, universe: np.ndarray) -> np.ndarray:
    """Subtract each row's universe mean and divide by its universe std (ddof 0).

    Rows with fewer than two universe values, or no dispersion, become NaN.
    """
    masked = _masked(values, universe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(masked, axis=1, keepdims=True)
        std = np.nanstd(masked, axis=1, keepdims=True)
    count = np.isfinite(masked).sum(axis=1, keepdims=True)
    ok = (count >= 2) & (std > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, (values - mean) / np.where(ok, std, 1.0), np.nan)


def style_exposures(
    inputs: StyleInputs,
    universe: np.ndarray,
    factors: tuple[str, ...] = STYLE_FACTORS,
    winsor_q: float = 0.01,
) -> StyleExposures:
    """Raw factors, winsorised then standardised row by row across `universe` (T, N).

    Names outside the universe keep a value on the universe's scale (a held name that
    left the index still has an exposure).
    """
    raw = raw_style_factors(inputs)
    values = np.stack(
        [standardise(winsorise(raw[f], universe, winsor_q), universe) for f in factors]
    )
    return StyleExposures(factors=factors, values=values, amount_source=inputs.amount_source)


def view_style_exposures(
    view: MarketView, factors: tuple[str, ...] = STYLE_FACTORS
) -> dict[str, np.ndarray]:
    """Each factor's (N,) exposures known before T's open, standardised across T's members.

    Reads only the view (rows < T); equals row t-1 of the panel computation.
    """
    inputs = inputs_from_view(view)
    if inputs.adj_close.shape[0] == 0:
        return {f: np.full(len(view.symbols), np.nan) for f in factors}
    universe = np.zeros(inputs.adj_close.shape, dtype=bool)
    universe[-1] = view.member_mask() & inputs.tradable[-1]
    exposures = style_exposures(inputs, universe, factors)
    return {f: exposures.values[k, -1] for k, f in enumerate(factors)}


def member_masks(panel: Panel, rows: np.ndarray) -> np.ndarray:
    """(len(rows), N) universe of each panel row's day, as `MarketView.member_mask` gives it.

    With a membership table: intervals `start <= day < end`; without one: the symbols
    with a bar on the previous row.
    """
    rows = np.asarray(rows, dtype=np.int64)
    out = np.zeros((rows.size, len(panel.symbols)), dtype=bool)
    intervals = panel.membership
    if intervals is None:
        ok = rows > 0
        out[ok] = panel.listed[rows[ok] - 1]
        return out
    days = panel.dates[rows]
    active = (intervals.start[:, None] <= days[None, :]) & (days[None, :] < intervals.end[:, None])
    active &= (intervals.column >= 0)[:, None]
    which, day = np.nonzero(active)
    out[day, intervals.column[which]] = True
    return out
