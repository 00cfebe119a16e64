"""The checker's indicators in NumPy, written from their textbook definitions.

They share no code with the builder's backtrader path: SMA; EMA seeded with the simple mean;
Wilder RSI seeded with the simple mean; crossings judged against the last non-zero difference
(backtrader documents the same conventions for bt.ind.SMA, EMA, RSI and CrossOver).
"""

from __future__ import annotations

import math

import numpy as np


def sma(x: np.ndarray, n: int) -> np.ndarray:
    """Simple moving average; NaN until n values exist (NaN inputs propagate)."""
    out = np.full(len(x), np.nan)
    if len(x) >= n:
        windows = np.lib.stride_tricks.sliding_window_view(x, n)
        out[n - 1 :] = [math.fsum(w) / n for w in windows]
    return out


def _smooth(x: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """Exponential smoothing seeded with the mean of the first n defined values."""
    out = np.full(len(x), np.nan)
    first = int(np.argmax(~np.isnan(x)))
    seed_at = first + n - 1
    if seed_at >= len(x):
        return out
    prev = math.fsum(x[first : seed_at + 1]) / n
    out[seed_at] = prev
    keep = 1.0 - alpha
    for t in range(seed_at + 1, len(x)):
        prev = prev * keep + x[t] * alpha
        out[t] = prev
    return out


def ema(x: np.ndarray, n: int) -> np.ndarray:
    """EMA with alpha = 2 / (n + 1), seeded with the simple mean of the first n values."""
    return _smooth(x, n, 2.0 / (n + 1.0))


def rsi(close: np.ndarray, n: int) -> np.ndarray:
    """Wilder RSI: smoothed up-moves over smoothed down-moves (alpha = 1/n)."""
    diff = np.full(len(close), np.nan)
    diff[1:] = close[1:] - close[:-1]
    up = np.where(np.isnan(diff), np.nan, np.maximum(diff, 0.0))
    down = np.where(np.isnan(diff), np.nan, np.maximum(-diff, 0.0))
    mu, md = _smooth(up, n, 1.0 / n), _smooth(down, n, 1.0 / n)
    return 100.0 - 100.0 / (1.0 + mu / md)


def crossings(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """+1 where a crosses above b, -1 below, 0 otherwise; NaN until defined.

    A crossing compares today's sign of a - b with the last non-zero difference before
    today, so touching without crossing is not counted.
    """
    d = a - b
    out = np.full(len(d), np.nan)
    valid = np.flatnonzero(~np.isnan(d))
    if len(valid) < 2:
        return out
    last = d[valid[0]]
    for t in range(valid[0] + 1, len(d)):
        up = 1.0 if (last < 0 and a[t] > b[t]) else 0.0
        down = 1.0 if (last > 0 and a[t] < b[t]) else 0.0
        out[t] = up - down
        if d[t] != 0:
            last = d[t]
    return out
