"""Confidence intervals and tests for reports and leaderboards.

- Proportions: the Wilson interval (`wilson_interval`), the exact one-sided binomial test
  against a known rate (`binomial_greater`), McNemar's exact test of two classifiers on the
  same items (`mcnemar_exact`).
- Means of a few values (seeds): the Student-t interval (`t_interval`) and the paired
  t-test (`paired_t`); the percentile bootstrap (`bootstrap_mean_ci`) only from
  `PERCENTILE_MIN_N` values, where it covers (docs/statistics.md).
- Multiple comparisons: Holm's step-down adjustment (`holm_adjust`).

Intervals return an `Interval`; too-short input gives NaN bounds by contract, not an
error, and one value never gives a point interval.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict
from scipy import stats as scipy_stats

from tradebench.errors import ConfigError, DataError
from tradebench.metrics._arrays import as_floats

BOOTSTRAP_RESAMPLES = 10_000
"""Default number of bootstrap resamples."""
_MAX_DRAWS_PER_CHUNK = 2_000_000
"""Resample indices drawn at once, bounding memory (16 MB) whatever the sample size."""

PERCENTILE_MIN_N = 30
"""Fewest values for which the percentile bootstrap of a mean is used: below it the
interval undercovers (simulated in docs/statistics.md: 49% at n = 2, 88% at n = 10, about
94% at n = 30 for normal values)."""

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "PERCENTILE_MIN_N",
    "Interval",
    "PairedTest",
    "binomial_greater",
    "bootstrap_mean_ci",
    "holm_adjust",
    "mcnemar_exact",
    "paired_t",
    "t_interval",
    "wilson_interval",
]


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


def t_interval(values: ArrayLike, confidence: float = 0.95) -> Interval:
    """Student-t interval of a mean: ``mean ± t(1 - (1 - confidence) / 2, n - 1) s / sqrt(n)``
    with the sample standard deviation s (ddof 1). Exact for normal values at any n >= 2.

    Returns:
        `Interval`; NaN bounds with fewer than 2 values (one value has no interval), all
        NaN when empty or any value is NaN.

    Raises:
        ConfigError: `confidence` is not in (0, 1).
    """
    _z(confidence)
    x = as_floats(values, "values")
    nan = float("nan")
    if len(x) == 0 or np.isnan(x).any():
        return Interval(estimate=nan, low=nan, high=nan, confidence=confidence)
    mean = float(x.mean())
    if len(x) < 2:
        return Interval(estimate=mean, low=nan, high=nan, confidence=confidence)
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1))
    half /= math.sqrt(len(x))
    return Interval(estimate=mean, low=mean - half, high=mean + half, confidence=confidence)


class PairedTest(BaseModel):
    """A mean difference over pairs with its interval and two-sided p-value."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    n: int
    """Pairs."""
    estimate: float
    """Mean of the differences."""
    low: float
    """Lower bound; NaN when undefined."""
    high: float
    """Upper bound; NaN when undefined."""
    p_value: float
    """Two-sided p-value of a zero mean difference; NaN when undefined (fewer than 2 pairs
    or differences that do not vary)."""


def paired_t(differences: ArrayLike, confidence: float = 0.95) -> PairedTest:
    """The paired t-test of per-pair differences (`a_i - b_i`): their mean, its Student-t
    interval and the two-sided p-value of ``t = mean / (s / sqrt(n))`` on n - 1 degrees of
    freedom. Differences that do not vary (s = 0) have no test: NaN bounds and p-value.

    Raises:
        ConfigError: `confidence` is not in (0, 1).
    """
    ci = t_interval(differences, confidence)
    x = as_floats(differences, "differences")
    nan = float("nan")
    n = len(x)
    if n < 2 or np.isnan(x).any() or float(np.ptp(x)) == 0.0:  # all equal: no spread
        return PairedTest(n=n, estimate=ci.estimate, low=nan, high=nan, p_value=nan)
    t = ci.estimate / (float(x.std(ddof=1)) / math.sqrt(n))
    p = float(2 * scipy_stats.t.sf(abs(t), n - 1))
    return PairedTest(n=n, estimate=ci.estimate, low=ci.low, high=ci.high, p_value=p)


def holm_adjust(p_values: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control at any level):
    sorted ascending, ``p_(i) * (m - i + 1)``, made non-decreasing and capped at 1. NaN
    p-values stay NaN and do not count in m.

    References:
        Holm, S. (1979). A Simple Sequentially Rejective Multiple Test Procedure.
        Scandinavian Journal of Statistics 6(2), 65-70.
    """
    p = np.asarray(p_values, dtype=np.float64).ravel()
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def binomial_greater(successes: int, n: int, rate: float) -> float:
    """Exact one-sided binomial p-value of `successes` in `n` trials against a known
    success rate: P(X >= successes) for X ~ Binomial(n, rate); NaN when n = 0.

    Raises:
        DataError: Counts are not integers with 0 <= successes <= n, or the rate is not in
            [0, 1].
    """
    if int(successes) != successes or int(n) != n or not 0 <= successes <= n:
        raise DataError(f"need integers 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0 <= rate <= 1:
        raise DataError(f"rate must be in [0, 1], got {rate}")
    if n == 0:
        return float("nan")
    return float(scipy_stats.binom.sf(int(successes) - 1, int(n), rate))


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """McNemar's exact two-sided test of two classifiers on the same items, from the
    discordant counts (items only A got right, items only B got right): the two-sided
    binomial test of `only_a` in `only_a + only_b` trials at rate 1/2; 1.0 without
    discordant items.

    Raises:
        DataError: A count is negative or not an integer.
    """
    if int(only_a) != only_a or int(only_b) != only_b or min(only_a, only_b) < 0:
        raise DataError(f"need non-negative integer counts, got {only_a} and {only_b}")
    total = int(only_a) + int(only_b)
    if total == 0:
        return 1.0
    k = min(int(only_a), int(only_b))
    return float(min(1.0, 2 * scipy_stats.binom.cdf(k, total, 0.5)))
