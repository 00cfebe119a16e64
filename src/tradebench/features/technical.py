"""Technical features over the visible panel: the observation table and research tools.

Every function reads a `MarketView` (so nothing at or after T is visible) and returns
one value per column (N,), NaN where history is too short. Returns use adjusted prices;
suspended days count as flat.

With `cols`, a function reads those columns only and returns their values in that order.
The values are bit for bit those of the full computation when `cols` holds at least two
columns: a sum down the rows of a (L, N) window adds row after row for every column, while
numpy sums a single column pairwise, which can round differently. `FeatureTable` computes
features when first read: all columns of a feature a screen ranks, a few columns for a
snapshot (`FeatureTable.rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from tradebench.view import MarketView

FEATURES = ("ret_5d", "ret_20d", "ret_60d", "vol_20d", "amount_20d", "dist_52w_high", "rsi_14")
TRADING_DAYS = 252

Columns = np.ndarray | None
"""Column positions to compute (None: every column of the view)."""


def _rows(view: MarketView, field: str, lookback: int, cols: Columns) -> np.ndarray:
    """The last `lookback` visible rows of `field`, of `cols` only when given (row-major,
    as the panel is: `rows[:, cols]` would be column-major, summed in another order)."""
    rows = view.window(field, lookback)
    return rows if cols is None else rows.take(cols, axis=1)


def _width(view: MarketView, cols: Columns) -> int:
    return len(view.symbols) if cols is None else len(cols)


def trailing_return(view: MarketView, days: int, cols: Columns = None) -> np.ndarray:
    """Adjusted close-to-close return over the last `days` visible days."""
    adj = _rows(view, "adj_close", days + 1, cols)
    if adj.shape[0] < days + 1:
        return np.full(_width(view, cols), np.nan)
    return adj[-1] / adj[0] - 1.0


def daily_returns(view: MarketView, days: int, cols: Columns = None) -> np.ndarray:
    """(days, N) adjusted daily returns of the last `days` visible days."""
    adj = _rows(view, "adj_close", days + 1, cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        return adj[1:] / adj[:-1] - 1.0


def volatility(
    view: MarketView, days: int = 20, periods_per_year: int = TRADING_DAYS, cols: Columns = None
) -> np.ndarray:
    """Annualised std (ddof=1) of the last `days` daily returns; NaN with < days returns."""
    ret = daily_returns(view, days, cols)
    if ret.shape[0] < days:
        return np.full(_width(view, cols), np.nan)
    with np.errstate(invalid="ignore"):
        return np.std(ret, axis=0, ddof=1) * np.sqrt(periods_per_year)


def traded_amount(view: MarketView, days: int = 20, cols: Columns = None) -> np.ndarray:
    """Mean daily traded value over `days` (the `amount` column, else volume x close)."""
    amount = _rows(view, "amount", days, cols)
    estimate = _rows(view, "volume", days, cols) * _rows(view, "close", days, cols)
    value = np.where(np.isfinite(amount), amount, estimate)
    if value.shape[0] == 0:
        return np.full(_width(view, cols), np.nan)
    counts = np.isfinite(value).sum(axis=0)
    total = np.nansum(value, axis=0)
    return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def distance_to_high(
    view: MarketView, days: int = TRADING_DAYS, cols: Columns = None
) -> np.ndarray:
    """Last adjusted close / max adjusted close over `days` minus 1 (<= 0)."""
    adj = _rows(view, "adj_close", days, cols)
    if adj.shape[0] == 0:
        return np.full(_width(view, cols), np.nan)
    with np.errstate(invalid="ignore"):
        return adj[-1] / np.nanmax(np.where(np.isfinite(adj), adj, -np.inf), axis=0) - 1.0


def rsi(view: MarketView, days: int = 14, cols: Columns = None) -> np.ndarray:
    """Wilder's RSI over the visible history (seeded with a simple mean of `days` moves)."""
    adj = _rows(view, "adj_close", 4 * days + 1, cols)
    if adj.shape[0] < days + 1:
        return np.full(_width(view, cols), np.nan)
    diff = np.diff(adj, axis=0)
    gain, loss = np.clip(diff, 0, None), np.clip(-diff, 0, None)
    avg_gain = _wilder(gain[:days].mean(axis=0), gain[days:], days)
    avg_loss = _wilder(loss[:days].mean(axis=0), loss[days:], days)
    with np.errstate(invalid="ignore", divide="ignore"):
        rs = avg_gain / avg_loss
        out = 100.0 - 100.0 / (1.0 + rs)
    return np.where(avg_loss == 0, np.where(avg_gain > 0, 100.0, 50.0), out)


FEW_COLUMNS = 16
"""Up to this many columns, `_wilder` steps through Python floats (far fewer calls than
one array operation per day and per step)."""


def _wilder(avg: np.ndarray, moves: np.ndarray, days: int) -> np.ndarray:
    """Wilder's average `avg <- (avg x (days - 1) + move) / days` over the rows of `moves`
    ((L, N)), from `avg` ((N,)). Python floats and numpy float64 do the same IEEE operations
    in the same order, so both paths give the same bits."""
    if avg.shape[0] > FEW_COLUMNS:
        for move in moves:
            avg = (avg * (days - 1) + move) / days
        return avg
    out = []
    for a, column in zip(avg.tolist(), moves.T.tolist(), strict=True):
        for move in column:
            a = (a * (days - 1) + move) / days
        out.append(a)
    return np.array(out, dtype=float)


FEATURE_FUNCTIONS: dict[str, Callable[[MarketView, Columns], np.ndarray]] = {
    "ret_5d": lambda view, cols: trailing_return(view, 5, cols),
    "ret_20d": lambda view, cols: trailing_return(view, 20, cols),
    "ret_60d": lambda view, cols: trailing_return(view, 60, cols),
    "vol_20d": lambda view, cols: volatility(view, 20, cols=cols),
    "amount_20d": lambda view, cols: traded_amount(view, 20, cols),
    "dist_52w_high": lambda view, cols: distance_to_high(view, TRADING_DAYS, cols),
    "rsi_14": lambda view, cols: rsi(view, 14, cols),
}
"""How each of `FEATURES` is computed, in that order."""


def feature_table(view: MarketView) -> dict[str, np.ndarray]:
    """All `FEATURES` for every column of the view."""
    return {name: fn(view, None) for name, fn in FEATURE_FUNCTIONS.items()}


class FeatureTable(Mapping[str, np.ndarray]):
    """The `FEATURES` of one view, each computed when first read.

    `table[name]` is a feature for every column (computed once); `rows(cols)` gives every
    feature of a few columns, computed for those columns only (or read from a feature
    already computed for all), with the same values as the full table.
    """

    __slots__ = ("_full", "_row", "view")

    def __init__(self, view: MarketView) -> None:
        self.view = view
        self._full: dict[str, np.ndarray] = {}
        self._row: dict[int, dict[str, float]] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        values = self._full.get(name)
        if values is None:
            values = self._full[name] = FEATURE_FUNCTIONS[name](self.view, None)
        return values

    def __contains__(self, name: object) -> bool:
        return name in FEATURE_FUNCTIONS  # without computing it

    def __iter__(self) -> Iterator[str]:
        return iter(FEATURES)

    def __len__(self) -> int:
        return len(FEATURES)

    def rows(self, cols: Sequence[int]) -> list[dict[str, float]]:
        """For each column of `cols`, every feature (in `FEATURES` order) as a float (NaN
        where unknown)."""
        done = self._row
        todo = sorted({int(c) for c in cols if int(c) not in done})
        if todo:
            # two columns at least: numpy sums one column in another order (module doc)
            picked = np.array(todo if len(todo) > 1 else todo * 2, dtype=np.intp)
            values = {
                name: (
                    full[picked]
                    if (full := self._full.get(name)) is not None
                    else fn(self.view, picked)
                ).tolist()
                for name, fn in FEATURE_FUNCTIONS.items()
            }
            for i, col in enumerate(todo):
                done[col] = {name: values[name][i] for name in FEATURES}
        return [done[int(c)] for c in cols]
