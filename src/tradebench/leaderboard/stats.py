"""The leaderboard's interval settings and the tie-aware rank of MCQ rows.

- Interval of a mean over seeds (`mean_interval`, `inference.rows.seed_interval`):
  `t` (the default): mean ± t(1 - (1 - confidence) / 2, n - 1) · s / sqrt(n), s the
  sample std (ddof 1), exact for normal outcomes at any n >= 2; `bootstrap`: the seeded
  percentile bootstrap, used only from `metrics.stats.PERCENTILE_MIN_N` values (below it
  undercovers: 49% at n = 2, 88% at n = 10), Student t below. One value has no interval
  (NaN bounds), never a point interval.
- Board rows, paired comparisons and ranks: `tradebench.inference`.
- MCQ rank with ties (`tie_ranks`): 1 + the number of rows whose Wilson interval lies
  wholly above the row's; a row without a mean has no rank.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict

from tradebench.errors import ConfigError
from tradebench.inference.rows import InferenceSettings, seed_interval
from tradebench.metrics.stats import PERCENTILE_MIN_N

IntervalMethod = Literal["t", "bootstrap"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = ("t", "bootstrap")

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

    method: IntervalMethod = "t"
    """Over seeds: `t` (Student t) or `bootstrap` (percentile, from 30 seeds only)."""
    confidence: float = 0.95
    """Two-sided nominal coverage; tests run at level 1 - confidence."""
    resamples: int = 2_000
    """Bootstrap resamples (block bootstrap over days; percentile over seeds)."""
    seed: int = 0
    """Seed of every bootstrap (each interval uses it afresh)."""

    def inference(self) -> InferenceSettings:
        """The same settings for `tradebench.inference`."""
        if not 0 < self.confidence < 1:
            raise ConfigError(f"confidence must be in (0, 1), got {self.confidence}")
        return InferenceSettings(
            confidence=self.confidence,
            seed_method=self.method,
            resamples=self.resamples,
            seed=self.seed,
        )

    def describe(self) -> str:
        """The method in words, for the page."""
        level = f"{self.confidence:.0%}"
        seeds = f"{level} Student-t intervals over seeds (mean ± t·s/√n, ddof 1)"
        if self.method == "bootstrap":
            seeds = (
                f"{level} percentile-bootstrap intervals over seeds from {PERCENTILE_MIN_N} "
                f"seeds ({self.resamples:,} resamples, seed {self.seed}), Student t below"
            )
        return (
            f"{seeds}; over days, {level} stationary block-bootstrap intervals "
            f"({self.resamples:,} resamples, seed {self.seed}, Politis-White block length)"
        )


class MeanInterval(BaseModel):
    """A mean over n values and its interval."""

    model_config = ConfigDict(frozen=True)

    n: int
    """Values (seeds or pairs) the mean is over."""
    mean: float
    """Their mean; NaN when n = 0."""
    low: float
    """Lower bound; NaN when undefined (fewer than two values)."""
    high: float
    """Upper bound; NaN when undefined."""


def mean_interval(values: ArrayLike, settings: IntervalSettings) -> MeanInterval:
    """The mean of the finite `values` with its interval over seeds (module docstring).

    Raises:
        ConfigError: `confidence` is not in (0, 1).
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    nan = float("nan")
    if len(x) == 0:
        settings.inference()
        return MeanInterval(n=0, mean=nan, low=nan, high=nan)
    ci = seed_interval(x, settings.inference())
    return MeanInterval(n=len(x), mean=float(x.mean()), low=ci.low, high=ci.high)


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
