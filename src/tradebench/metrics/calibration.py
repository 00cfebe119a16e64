"""Calibration of the confidence an LLM agent attaches to its orders: ECE, Brier, bins.

Every order may carry a `confidence` in [0, 1] (from the agent) and an `outcome` (from the
benchmark): 1.0 when the order's call was right, 0.0 when wrong, NaN when it cannot be
scored. For the portfolio benchmarks a BUY is right when the stock's close-to-close
return on the day after the fill is > 0, a SELL when it is < 0. An order is *scored* when
both values are present; every metric here uses scored orders only and is NaN when there
are none (a baseline has no confidences).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from tradebench.errors import ConfigError, DataError
from tradebench.metrics._arrays import as_floats, same_length

CALIBRATION_BINS = 10
"""Default number of equal-width confidence bins on [0, 1]."""

__all__ = ["CALIBRATION_BINS", "brier", "calibration_bins", "ece"]


def _scored(confidence: ArrayLike, outcome: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The scored pairs: both values present; raises `DataError` if one is out of [0, 1]."""
    c = as_floats(confidence, "confidence")
    o = as_floats(outcome, "outcome")
    same_length(c, o, "confidence and outcome")
    keep = ~(np.isnan(c) | np.isnan(o))
    c, o = c[keep], o[keep]
    for name, x in (("confidence", c), ("outcome", o)):
        if ((x < 0) | (x > 1)).any():
            raise DataError(f"{name} must lie in [0, 1]; found {x[(x < 0) | (x > 1)][0]!r}")
    return c, o


def _bin_index(c: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin of each confidence: [k/n, (k+1)/n) for k < n-1, the last bin [(n-1)/n, 1]."""
    if not (isinstance(n_bins, int | np.integer) and n_bins >= 1):
        raise ConfigError(f"n_bins must be a positive integer, got {n_bins!r}")
    # k / n is the correctly rounded edge, so a confidence written as 0.3 lands in the
    # bin starting at 0.3 (np.linspace's 0.30000000000000004 would put it one bin lower).
    edges = np.arange(n_bins + 1) / n_bins
    return np.minimum(np.searchsorted(edges, c, side="right") - 1, n_bins - 1)


def calibration_bins(
    confidence: ArrayLike, outcome: ArrayLike, n_bins: int = CALIBRATION_BINS
) -> pd.DataFrame:
    """Reliability table of the scored orders over equal-width confidence bins.

    Args:
        confidence: Stated confidence of each order, in [0, 1] or NaN.
        outcome: Outcome of each order: 1.0 right, 0.0 wrong, NaN not scorable.
        n_bins: Number of equal-width bins on [0, 1]; the last bin is closed.

    Returns:
        One row per bin, always `n_bins` rows, with columns `lower`, `upper`, `count`,
        `mean_confidence` and `mean_outcome` (the last two NaN for an empty bin).

    Raises:
        DataError: Lengths differ or a value is outside [0, 1].
        ConfigError: `n_bins` is not a positive integer.
    """
    c, o = _scored(confidence, outcome)
    k = _bin_index(c, n_bins)
    count = np.bincount(k, minlength=n_bins)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_c = np.bincount(k, weights=c, minlength=n_bins) / count
        mean_o = np.bincount(k, weights=o, minlength=n_bins) / count
    return pd.DataFrame(
        {
            "lower": np.arange(n_bins) / n_bins,
            "upper": np.arange(1, n_bins + 1) / n_bins,
            "count": count.astype(np.int64),
            "mean_confidence": mean_c,
            "mean_outcome": mean_o,
        }
    )


def ece(confidence: ArrayLike, outcome: ArrayLike, n_bins: int = CALIBRATION_BINS) -> float:
    """Expected calibration error over equal-width confidence bins.

    With bins B_k = [k/n, (k+1)/n) for k < n-1 and B_{n-1} = [(n-1)/n, 1] (closed), over
    the N scored orders::

        ECE = sum_k (|B_k| / N) * |mean(outcome in B_k) - mean(confidence in B_k)|

    Empty bins contribute 0.

    Args:
        confidence: Stated confidence of each order, in [0, 1] or NaN.
        outcome: Outcome of each order: 1.0 right, 0.0 wrong, NaN not scorable.
        n_bins: Number of bins (`CALIBRATION_BINS` = 10 by default).

    Returns:
        ECE in [0, 1]; NaN when no order is scored.

    Raises:
        DataError: Lengths differ or a value is outside [0, 1].
        ConfigError: `n_bins` is not a positive integer.

    References:
        Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2015). Obtaining Well Calibrated
        Probabilities Using Bayesian Binning. AAAI. Guo, C. et al. (2017). On Calibration
        of Modern Neural Networks. ICML. https://arxiv.org/abs/1706.04599
    """
    table = calibration_bins(confidence, outcome, n_bins)
    n = int(table["count"].sum())
    if n == 0:
        return float("nan")
    used = table[table["count"] > 0]
    gap = (used["mean_outcome"] - used["mean_confidence"]).abs()
    return float((used["count"] / n * gap).sum())


def brier(confidence: ArrayLike, outcome: ArrayLike) -> float:
    """Brier score of the scored orders: ``mean((confidence - outcome)^2)``.

    Args:
        confidence: Stated confidence of each order, in [0, 1] or NaN.
        outcome: Outcome of each order: 1.0 right, 0.0 wrong, NaN not scorable.

    Returns:
        The score in [0, 1] (0 is perfect; always answering 0.5 scores 0.25); NaN when no
        order is scored.

    Raises:
        DataError: Lengths differ or a value is outside [0, 1].

    References:
        Brier, G. W. (1950). Verification of Forecasts Expressed in Terms of Probability.
        Monthly Weather Review 78(1), 1-3.
    """
    c, o = _scored(confidence, outcome)
    if len(c) == 0:
        return float("nan")
    return float(np.mean((c - o) ** 2))
