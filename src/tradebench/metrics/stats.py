"""Confidence intervals for reports and leaderboards: Wilson (proportions), bootstrap (means).

Both return an `Interval`; too-short input gives a NaN interval by contract, not an error.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict

from tradebench.errors import ConfigError, DataError
from tradebench.metrics._arrays import as_floats

BOOTSTRAP_RESAMPLES = 10_000
"""Default number of bootstrap resamples."""
_MAX_DRAWS_PER_CHUNK = 2_000_000
"""Resample indices drawn at once, bounding memory (16 MB) whatever the sample size."""

__all__ = ["BOOTSTRAP_RESAMPLES", "Interval", "bootstrap_mean_ci", "wilson_interval"]


class Interval(BaseModel):
    """A point estimate with a two-sided confidence interval."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    estimate: float
    """Point estimate (the sample proportion or mean); NaN when undefined."""
    low: float
    """Lower bound of the interval; NaN when undefined."""
    high: float
    """Upper bound of the interval; NaN when undefined."""
    confidence: float
    """Nominal coverage of the interval, e.g. 0.95."""


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}; e.g. 0.95")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion.

    With ``p = successes / n`` and ``z`` the standard normal quantile at
    ``(1 + confidence) / 2``::

        centre = (p + z^2 / (2n)) / (1 + z^2 / n)
        half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / (4 n^2))
        [low, high] = [centre - half, centre + half]

    Unlike the normal (Wald) interval it stays inside [0, 1] and is not degenerate at
    p = 0 or 1.

    Args:
        successes: Number of successes.
        n: Number of trials.
        confidence: Nominal two-sided coverage.

    Returns:
        `Interval` with estimate p; all NaN when ``n == 0``.

    Raises:
        DataError: Counts are not integers with ``0 <= successes <= n``.
        ConfigError: `confidence` is not in (0, 1).

    References:
        Wilson, E. B. (1927). Probable Inference, the Law of Succession, and Statistical
        Inference. JASA 22(158), 209-212. Brown, L. D., Cai, T. T. & DasGupta, A. (2001).
        Interval Estimation for a Binomial Proportion. Statistical Science 16(2).
    """
    z = _z(confidence)
    if int(successes) != successes or int(n) != n or not 0 <= successes <= n:
        raise DataError(f"need integers 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        nan = float("nan")
        return Interval(estimate=nan, low=nan, high=nan, confidence=confidence)
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # The bounds are exactly 0 at p = 0 and 1 at p = 1; the subtraction leaves ~1e-17.
    low = 0.0 if successes == 0 else max(0.0, float(centre - half))
    high = 1.0 if successes == n else min(1.0, float(centre + half))
    return Interval(estimate=p, low=low, high=high, confidence=confidence)


def bootstrap_mean_ci(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Seeded percentile-bootstrap interval for the mean.

    Draws `n_resamples` samples of size n with replacement (from
    ``np.random.default_rng(seed)``), takes each sample's mean, and returns the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those means
    (numpy's default linear interpolation). Same inputs and seed give the same interval.

    Args:
        values: The observations (e.g. one metric value per episode).
        confidence: Nominal two-sided coverage.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the resampling generator.

    Returns:
        `Interval` with the sample mean as estimate; all NaN for an empty input or any NaN
        value (drop missing values first if they should be ignored). A single value gives
        the degenerate interval [x, x].

    Raises:
        ConfigError: `confidence` is not in (0, 1) or `n_resamples` < 1.

    References:
        Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 13.
    """
    _z(confidence)
    if n_resamples < 1:
        raise ConfigError(f"n_resamples must be at least 1, got {n_resamples}")
    x = as_floats(values, "values")
    if len(x) == 0 or np.isnan(x).any():
        nan = float("nan")
        return Interval(estimate=nan, low=nan, high=nan, confidence=confidence)
    rng = np.random.default_rng(seed)
    n = len(x)
    chunk = max(1, _MAX_DRAWS_PER_CHUNK // n)
    means = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        means[start:stop] = x[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(
        estimate=float(x.mean()), low=float(low), high=float(high), confidence=confidence
    )
