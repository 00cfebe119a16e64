"""Signal quality of a factor model's scores: IC, rank IC and ICIR. Pure functions.

The daily IC is the cross-sectional Pearson correlation between the scores made before
day t's open and the label realised afterwards (Qlib's convention: the return from t's
close to t+1's close); the rank IC is the same on ranks (Spearman). ICIR = mean / std
(ddof 1) of the daily series, not annualised. Too-short input gives NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

MIN_NAMES = 10
"""A day needs at least this many scored names with a label to have an IC."""

__all__ = ["MIN_NAMES", "SignalQuality", "daily_ic", "signal_quality"]


@dataclass(frozen=True)
class SignalQuality:
    """Summary of a daily IC series."""

    ic: float
    """Mean daily IC."""
    ic_std: float
    icir: float
    """Mean / std of the daily IC."""
    rank_ic: float
    """Mean daily rank IC."""
    rank_ic_std: float
    rank_icir: float
    n_days: int
    """Days with an IC."""


def _row_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row's finite pairs (NaN below `MIN_NAMES` or if flat)."""
    ok = np.isfinite(a) & np.isfinite(b)
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        am = np.where(ok, a, 0.0).sum(axis=1) / n
        bm = np.where(ok, b, 0.0).sum(axis=1) / n
        da = np.where(ok, a - am[:, None], 0.0)
        db = np.where(ok, b - bm[:, None], 0.0)
        out = (da * db).sum(axis=1) / np.sqrt((da**2).sum(axis=1) * (db**2).sum(axis=1))
    return np.where((n >= MIN_NAMES) & np.isfinite(out), out, np.nan)


def daily_ic(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(IC, rank IC) per row of (D, N) scores and labels; NaN cells are left out."""
    both = np.isfinite(scores) & np.isfinite(labels)
    s, y = np.where(both, scores, np.nan), np.where(both, labels, np.nan)
    rank_s = pd.DataFrame(s).rank(axis=1).to_numpy()
    rank_y = pd.DataFrame(y).rank(axis=1).to_numpy()
    return _row_corr(s, y), _row_corr(rank_s, rank_y)


def _mean_std_ratio(values: np.ndarray) -> tuple[float, float, float]:
    v = values[np.isfinite(values)]
    if v.size < 2:
        return (float(v.mean()) if v.size else np.nan), np.nan, np.nan
    mean, std = float(v.mean()), float(v.std(ddof=1))
    return mean, std, (mean / std if std > 0 else np.nan)


def signal_quality(ic: np.ndarray, rank_ic: np.ndarray) -> SignalQuality:
    """Means, stds and IRs of daily IC and rank IC series."""
    m, s, r = _mean_std_ratio(np.asarray(ic, dtype=np.float64))
    rm, rs, rr = _mean_std_ratio(np.asarray(rank_ic, dtype=np.float64))
    return SignalQuality(
        ic=m,
        ic_std=s,
        icir=r,
        rank_ic=rm,
        rank_ic_std=rs,
        rank_icir=rr,
        n_days=int(np.isfinite(ic).sum()),
    )
