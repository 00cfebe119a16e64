"""Trailing-window operators over (T, N) panels, vectorised down every column at once.

Row t of every result uses rows t-window+1 .. t only, so a feature at row t never reads
a later row (the point-in-time property the style and Alpha158-style features rely on).
Rows without a full window are NaN unless a `min_periods` says otherwise; a NaN inside a
window makes the result NaN for the strict operators (`min_periods = window`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

EPS = 1e-12
"""Guard added to denominators, as in Qlib's Alpha158 expressions."""

__all__ = [
    "EPS",
    "delay",
    "rolling_argmax",
    "rolling_argmin",
    "rolling_corr",
    "rolling_max",
    "rolling_mean",
    "rolling_min",
    "rolling_quantile",
    "rolling_rank_last",
    "rolling_regression",
    "rolling_skew",
    "rolling_std",
    "rolling_sum",
    "safe_div",
]


def _frame(values: np.ndarray, window: int, min_periods: int | None) -> pd.core.window.Rolling:
    mp = window if min_periods is None else min_periods
    return pd.DataFrame(values, copy=False).rolling(window, min_periods=mp)


def _strict(window: int, min_periods: int | None) -> bool:
    """Full windows only: the numpy path (pandas' column loop is slow on short panels)."""
    return min_periods is None or min_periods >= window


def _moments(values: np.ndarray, window: int, power: int) -> list[np.ndarray]:
    """Window count and sums of x, x², ... x**power over the finite values (prefix sums)."""
    finite = np.isfinite(values)
    x = np.where(finite, values, 0.0)
    out = [_window_sums(finite.astype(np.float64), window)]
    term = np.ones_like(x)
    for _ in range(power):
        term = term * x
        out.append(_window_sums(term, window))
    return out


def _need(window: int, min_periods: int | None, floor: int = 1) -> int:
    return max(window if min_periods is None else min_periods, floor)


def rolling_sum(values: np.ndarray, window: int, min_periods: int | None = None) -> np.ndarray:
    """Trailing sum of the finite values, NaN with fewer than `min_periods` (default: the
    whole window)."""
    n, s1 = _moments(values, window, 1)
    return np.where(n >= _need(window, min_periods) - 0.5, s1, np.nan)


def rolling_mean(values: np.ndarray, window: int, min_periods: int | None = None) -> np.ndarray:
    """Trailing mean of the finite values, NaN with fewer than `min_periods` (default: the
    whole window)."""
    n, s1 = _moments(values, window, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= _need(window, min_periods) - 0.5, s1 / n, np.nan)


def rolling_std(values: np.ndarray, window: int, min_periods: int | None = None) -> np.ndarray:
    """Trailing sample standard deviation (ddof = 1) of the finite values.

    Full windows (the default) use an exact per-window pass; with `min_periods` the
    moments come from prefix sums.
    """
    if _strict(window, min_periods):
        return _by_columns(lambda win: np.std(win, axis=-1, ddof=1), values, window, check=False)
    n, s1, s2 = _moments(values, window, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1)
    return np.where(n >= _need(window, min_periods, 2) - 0.5, np.sqrt(var), np.nan)


def rolling_skew(values: np.ndarray, window: int, min_periods: int | None = None) -> np.ndarray:
    """Trailing bias-corrected sample skewness of the finite values (pandas' definition),
    NaN with fewer than max(3, `min_periods`) values or no dispersion."""
    n, s1, s2, s3 = _moments(values, window, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / n
        m2 = np.maximum(s2 / n - mean * mean, 0.0)
        m3 = s3 / n - 3.0 * mean * s2 / n + 2.0 * mean**3
        g1 = m3 / m2**1.5
        out = g1 * np.sqrt(n * (n - 1.0)) / (n - 2.0)
    flat = ~(m2 > 1e-14 * np.maximum(mean * mean, 1e-12))
    ok = (n >= _need(window, min_periods, 3) - 0.5) & ~flat
    return np.where(ok, out, np.nan)


def rolling_max(values: np.ndarray, window: int, min_periods: int | None = None) -> np.ndarray:
    """Trailing maximum."""
    if not _strict(window, min_periods):
        return _frame(values, window, min_periods).max().to_numpy()
    return _by_columns(lambda win: np.max(win, axis=-1), values, window, check=False)


def rolling_min(values: np.ndarray, window: int, min_periods: int | None = None) -> np.ndarray:
    """Trailing minimum."""
    if not _strict(window, min_periods):
        return _frame(values, window, min_periods).min().to_numpy()
    return _by_columns(lambda win: np.min(win, axis=-1), values, window, check=False)


def rolling_quantile(values: np.ndarray, window: int, q: float) -> np.ndarray:
    """Trailing `q` quantile with linear interpolation over full windows."""
    return _by_columns(lambda win: np.quantile(win, q, axis=-1), values, window, check=False)


def _window_sums(values: np.ndarray, window: int) -> np.ndarray:
    """Sum over each row's trailing window (shorter at the start) by prefix sums.

    Prefix sums only ever add earlier rows, so row t never depends on a later row.
    """
    total = values.shape[0]
    prefix = np.zeros((total + 1, *values.shape[1:]))
    np.cumsum(values, axis=0, out=prefix[1:])
    lo = np.maximum(np.arange(total) + 1 - window, 0)
    return prefix[1:] - prefix[lo]


def rolling_corr(
    a: np.ndarray, b: np.ndarray, window: int, min_periods: int | None = None
) -> np.ndarray:
    """Trailing Pearson correlation of `a` and `b`, column by column, over the rows of the
    window where both are finite (at least `min_periods`, default the window).

    NaN where either series is (numerically) constant in the window: the correlation is
    undefined there, and floating-point noise must not show up as a value.
    """
    mp = window if min_periods is None else min_periods
    both = np.isfinite(a) & np.isfinite(b)
    x, y = np.where(both, a, 0.0), np.where(both, b, 0.0)
    n = _window_sums(both.astype(np.float64), window)
    sx, sy = _window_sums(x, window), _window_sums(y, window)
    with np.errstate(invalid="ignore", divide="ignore"):
        sxx = _window_sums(x * x, window) - sx * sx / n
        syy = _window_sums(y * y, window) - sy * sy / n
        sxy = _window_sums(x * y, window) - sx * sy / n
        out = sxy / np.sqrt(sxx * syy)
        tiny_x = sxx <= 1e-10 * np.maximum(sx * sx / n, 1e-12)
        tiny_y = syy <= 1e-10 * np.maximum(sy * sy / n, 1e-12)
    bad = (n < mp) | tiny_x | tiny_y | ~np.isfinite(out)
    return np.where(bad, np.nan, np.clip(out, -1.0, 1.0))


def delay(values: np.ndarray, lag: int) -> np.ndarray:
    """Values `lag` rows earlier (`Ref(x, lag)`), NaN for the first `lag` rows."""
    out = np.full_like(values, np.nan, dtype=np.float64)
    if lag < values.shape[0]:
        out[lag:] = values[: values.shape[0] - lag]
    return out


def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """`num / den` with NaN (not inf) where the denominator is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(np.isfinite(out), out, np.nan)


CHUNK = 128
"""Columns per block of the window-view operators (bounds their temporaries)."""


def _by_columns(
    fn: Callable[[np.ndarray], np.ndarray], values: np.ndarray, window: int, check: bool = True
) -> np.ndarray:
    """Apply `fn` to (T - window + 1, n, window) window views of column blocks; NaN-pad the
    first rows so the result lines up with `values` (NaN where a window holds a NaN)."""
    total, n = values.shape
    out = np.full((total, n), np.nan)
    if total < window:
        return out
    for lo in range(0, n, CHUNK):
        block = values[:, lo : lo + CHUNK]
        win = sliding_window_view(block, window, axis=0)
        result = fn(win)
        if check:  # operators that do not propagate NaN themselves
            result = np.where(np.isnan(win).any(axis=-1), np.nan, result)
        out[window - 1 :, lo : lo + CHUNK] = result
    return out


def rolling_argmax(values: np.ndarray, window: int) -> np.ndarray:
    """1-based position of the window's maximum, counted from its oldest row."""
    return _by_columns(lambda win: np.argmax(win, axis=-1) + 1.0, values, window)


def rolling_argmin(values: np.ndarray, window: int) -> np.ndarray:
    """1-based position of the window's minimum, counted from its oldest row."""
    return _by_columns(lambda win: np.argmin(win, axis=-1) + 1.0, values, window)


def _rank_last(win: np.ndarray) -> np.ndarray:
    last = win[..., -1:]
    less = (win < last).sum(axis=-1)
    equal = (win == last).sum(axis=-1)
    return (less + (equal + 1) / 2.0) / win.shape[-1]


def rolling_rank_last(values: np.ndarray, window: int) -> np.ndarray:
    """Percentile rank (ties averaged, in (0, 1]) of each row's value within its window."""
    return _by_columns(_rank_last, values, window)


def rolling_regression(values: np.ndarray, window: int) -> tuple[np.ndarray, ...]:
    """Least-squares line of each window on time 0..window-1: (slope, R², last residual).

    The slope is an exact dot product over each window (no running-sum cancellation);
    R² is NaN for a flat window.
    """
    t = np.arange(window, dtype=np.float64)
    tc = t - t.mean()
    sxx = float(tc @ tc)
    slope = _by_columns(lambda win: np.einsum("tnw,w->tn", win, tc) / sxx, values, window)
    mean = rolling_mean(values, window)
    resid = values - (mean + slope * tc[-1])
    ss_tot = _by_columns(lambda win: np.var(win, axis=-1), values, window, check=False) * window
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = slope**2 * sxx / ss_tot
    flat = ~(ss_tot > 1e-12 * np.maximum(mean**2, 1.0))
    return slope, np.where(flat, np.nan, np.minimum(r2, 1.0)), resid
