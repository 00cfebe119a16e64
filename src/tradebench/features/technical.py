"""Technical features over the visible panel: the observation table and research tools.

Every function reads a `MarketView` (so nothing at or after T is visible) and returns
one value per column (N,), NaN where history is too short. Returns use adjusted prices;
suspended days count as flat.
"""

from __future__ import annotations

import numpy as np

from tradebench.view import MarketView

FEATURES = ("ret_5d", "ret_20d", "ret_60d", "vol_20d", "amount_20d", "dist_52w_high", "rsi_14")
TRADING_DAYS = 252


def trailing_return(view: MarketView, days: int) -> np.ndarray:
    """Adjusted close-to-close return over the last `days` visible days."""
    adj = view.window("adj_close", days + 1)
    if adj.shape[0] < days + 1:
        return np.full(len(view.symbols), np.nan)
    return adj[-1] / adj[0] - 1.0


def daily_returns(view: MarketView, days: int) -> np.ndarray:
    """(days, N) adjusted daily returns of the last `days` visible days."""
    adj = view.window("adj_close", days + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return adj[1:] / adj[:-1] - 1.0


def volatility(
    view: MarketView, days: int = 20, periods_per_year: int = TRADING_DAYS
) -> np.ndarray:
    """Annualised std (ddof=1) of the last `days` daily returns; NaN with < days returns."""
    ret = daily_returns(view, days)
    if ret.shape[0] < days:
        return np.full(len(view.symbols), np.nan)
    with np.errstate(invalid="ignore"):
        return np.std(ret, axis=0, ddof=1) * np.sqrt(periods_per_year)


def traded_amount(view: MarketView, days: int = 20) -> np.ndarray:
    """Mean daily traded value over `days` (the `amount` column, else volume x close)."""
    amount = view.window("amount", days)
    estimate = view.window("volume", days) * view.window("close", days)
    value = np.where(np.isfinite(amount), amount, estimate)
    if value.shape[0] == 0:
        return np.full(len(view.symbols), np.nan)
    counts = np.isfinite(value).sum(axis=0)
    total = np.nansum(value, axis=0)
    return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def distance_to_high(view: MarketView, days: int = TRADING_DAYS) -> np.ndarray:
    """Last adjusted close / max adjusted close over `days` minus 1 (<= 0)."""
    adj = view.window("adj_close", days)
    if adj.shape[0] == 0:
        return np.full(len(view.symbols), np.nan)
    with np.errstate(invalid="ignore"):
        return adj[-1] / np.nanmax(np.where(np.isfinite(adj), adj, -np.inf), axis=0) - 1.0


def rsi(view: MarketView, days: int = 14) -> np.ndarray:
    """Wilder's RSI over the visible history (seeded with a simple mean of `days` moves)."""
    adj = view.window("adj_close", 4 * days + 1)
    if adj.shape[0] < days + 1:
        return np.full(len(view.symbols), np.nan)
    diff = np.diff(adj, axis=0)
    gain, loss = np.clip(diff, 0, None), np.clip(-diff, 0, None)
    avg_gain, avg_loss = gain[:days].mean(axis=0), loss[:days].mean(axis=0)
    for g, lo in zip(gain[days:], loss[days:], strict=True):
        avg_gain = (avg_gain * (days - 1) + g) / days
        avg_loss = (avg_loss * (days - 1) + lo) / days
    with np.errstate(invalid="ignore", divide="ignore"):
        rs = avg_gain / avg_loss
        out = 100.0 - 100.0 / (1.0 + rs)
    return np.where(avg_loss == 0, np.where(avg_gain > 0, 100.0, 50.0), out)


def feature_table(view: MarketView) -> dict[str, np.ndarray]:
    """All `FEATURES` for every column of the view."""
    return {
        "ret_5d": trailing_return(view, 5),
        "ret_20d": trailing_return(view, 20),
        "ret_60d": trailing_return(view, 60),
        "vol_20d": volatility(view, 20),
        "amount_20d": traded_amount(view, 20),
        "dist_52w_high": distance_to_high(view, TRADING_DAYS),
        "rsi_14": rsi(view, 14),
    }
