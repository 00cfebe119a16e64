"""The leaderboard's statistics: seed-mean intervals, paired differences, tie-aware ranks.

- Interval of a mean over seeds, two methods:
  - `t`: mean ± t(1 - (1 - confidence) / 2, n - 1) · s / sqrt(n), s the sample std
    (ddof = 1); NaN bounds with one value.
  - `bootstrap`: the seeded percentile bootstrap of `metrics.stats.bootstrap_mean_ci`
    (`resamples` draws of n values with replacement from `numpy.random.default_rng(seed)`,
    the (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of their means); one value
    gives the point interval [x, x].
- Paired difference: the interval of the mean of per-pair differences (agent minus
  reference on the same window and seed), so what the seeds share cancels.
- Rank with ties: 1 + the number of rows whose interval lies wholly above the row's
  (`low` of the other > `high` of this one). Rows whose intervals overlap the best row's
  share rank 1; a row is ranked below another only when their intervals are disjoint.
  A row with a mean but no bounds (one seed under `t`) counts as the point [mean, mean];
  a row without a mean has no rank.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict
from scipy import stats as scipy_stats

from tradebench.errors import ConfigError
from tradebench.metrics.stats import bootstrap_mean_ci

IntervalMethod = Literal["bootstrap", "t"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = ("bootstrap", "t")

__all__ = [
    "INTERVAL_METHODS",
    "IntervalMethod",
    "IntervalSettings",
    "MeanInterval",
    "mean_interval",
    "tie_ranks",
]


class IntervalSettings(BaseModel):
    """How every interval of one board is computed."""

    model_config = ConfigDict(frozen=True)

    method: IntervalMethod = "bootstrap"
    """`bootstrap` (seeded percentile bootstrap) or `t` (Student t)."""
    confidence: float = 0.95
    """Two-sided nominal coverage."""
    resamples: int = 10_000
    """Bootstrap resamples."""
    seed: int = 0
    """Seed of the bootstrap generator (every interval uses it afresh)."""

    def describe(self) -> str:
        """The method in words, for the page."""
        level = f"{self.confidence:.0%}"
        if self.method == "t":
            return f"{level} Student-t intervals (mean ± t·s/√n, n seeds, ddof 1)"
        return (
            f"{level} percentile-bootstrap intervals ({self.resamples:,} resamples of the "
            f"seeds with replacement, numpy default_rng seed {self.seed})"
        )


class MeanInterval(BaseModel):
    """A mean over n values and its interval."""

    model_config = ConfigDict(frozen=True)

    n: int
    """Values (seeds or pairs) the mean is over."""
    mean: float
    """Their mean; NaN when n = 0."""
    low: float
    """Lower bound; NaN when undefined."""
    high: float
    """Upper bound; NaN when undefined."""


def _finite(values: ArrayLike) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    return x[np.isfinite(x)]


def mean_interval(values: ArrayLike, settings: IntervalSettings) -> MeanInterval:
    """The mean of the finite `values` with its interval (see the module docstring).

    Raises:
        ConfigError: `confidence` is not in (0, 1).
    """
    if not 0 < settings.confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {settings.confidence}")
    x = _finite(values)
    nan = float("nan")
    if len(x) == 0:
        return MeanInterval(n=0, mean=nan, low=nan, high=nan)
    mean = float(x.mean())
    if settings.method == "bootstrap":
        ci = bootstrap_mean_ci(
            x, confidence=settings.confidence, n_resamples=settings.resamples, seed=settings.seed
        )
        return MeanInterval(n=len(x), mean=mean, low=ci.low, high=ci.high)
    if len(x) < 2:
        return MeanInterval(n=1, mean=mean, low=nan, high=nan)
    half = scipy_stats.t.ppf(0.5 + settings.confidence / 2, len(x) - 1) * x.std(ddof=1)
    half /= np.sqrt(len(x))
    return MeanInterval(n=len(x), mean=mean, low=mean - half, high=mean + half)


def tie_ranks(low: ArrayLike, high: ArrayLike, mean: ArrayLike) -> np.ndarray:
    """Ranks (1 = best, higher values better) that tie overlapping intervals: 1 + the
    number of rows whose `low` exceeds this row's `high`. A row without bounds uses its
    mean as a point interval; a row without a mean gets NaN."""
    m = np.asarray(mean, dtype=np.float64)
    lo = np.where(np.isfinite(low), np.asarray(low, dtype=np.float64), m)
    hi = np.where(np.isfinite(high), np.asarray(high, dtype=np.float64), m)
    above = (lo[None, :] > hi[:, None]) & np.isfinite(lo)[None, :]
    ranks = 1.0 + above.sum(axis=1)
    return np.where(np.isfinite(m), ranks, np.nan)
