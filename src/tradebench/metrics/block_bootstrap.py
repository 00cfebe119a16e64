"""Within-episode uncertainty: the stationary block bootstrap over daily returns.

An episode's daily returns are one path of a dependent series, so resampling single days
(the i.i.d. bootstrap) understates the spread of anything built from them when returns are
autocorrelated or volatility clusters. The stationary bootstrap (Politis & Romano 1994)
resamples blocks of consecutive days whose lengths are geometric with mean `block`,
wrapping around the end of the series, so every resampled path is stationary.

Block length rule: the automatic selection of Politis & White (2004) with the correction of
Patton, Politis & White (2009), computed from the series itself (`optimal_block_length`):
the flat-top lag-window estimate of the long-run variance and its derivative, giving the
mean block length that minimises the MSE of the bootstrap variance estimator. The result is
clipped to [1, min(3 sqrt(n), n / 3)].

Statistics (`STATISTICS`): `mean` (mean daily return), `total_return` (compounded),
`sharpe` and `information_ratio` (annualised with `periods_per_year`; the IR's active
returns are `returns - benchmark`, resampled on the same days). Paired differences resample
the two series on the same days, so what the days share cancels.

Intervals are percentile intervals of `resamples` statistics; the p-value of a paired
difference is the share of centred resampled differences at least as far from zero as the
observed one, `(1 + #{|d* - d| >= |d|}) / (1 + resamples)` (the test that inverts the
basic bootstrap interval).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict

from tradebench.errors import ConfigError
from tradebench.metrics.returns import TRADING_DAYS_PER_YEAR

Statistic = Literal["mean", "total_return", "sharpe", "information_ratio"]
STATISTICS: tuple[Statistic, ...] = ("mean", "total_return", "sharpe", "information_ratio")
BLOCK_RESAMPLES = 2_000
"""Default resamples of a block bootstrap."""
MIN_DAYS = 10
"""Fewer daily returns than this give no block-bootstrap interval (NaN)."""

__all__ = [
    "BLOCK_RESAMPLES",
    "MIN_DAYS",
    "STATISTICS",
    "BlockInterval",
    "BlockRule",
    "Statistic",
    "block_interval",
    "block_rule",
    "optimal_block_length",
    "paired_block_difference",
    "stationary_indices",
]


class BlockInterval(BaseModel):
    """A statistic of daily returns with its stationary-block-bootstrap interval."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    statistic: str
    """Which statistic (`STATISTICS`)."""
    estimate: float
    """The statistic of the observed series (for a paired difference: a minus b)."""
    low: float
    """Lower percentile bound; NaN when undefined."""
    high: float
    """Upper percentile bound; NaN when undefined."""
    p_value: float
    """Two-sided p-value of `estimate == 0` (paired differences only; NaN otherwise)."""
    block: float
    """Mean block length used (days)."""
    scale: float
    """Bias-correction factor applied to the resampled deviations (`BlockRule.scale`; 1
    with a given block length)."""
    days: int
    """Daily returns the statistic is over."""
    confidence: float
    """Nominal two-sided coverage."""


def _clean(values: ArrayLike, name: str) -> np.ndarray:
    """Finite returns as a (days, series) matrix."""
    x = np.asarray(values, dtype=np.float64)
    x = x.reshape(len(x), -1) if x.ndim else x.reshape(1, 1)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ConfigError(f"{name} must be finite daily returns (drop missing days first)")
    return x


class BlockRule(BaseModel):
    """The block length of a series and the bias correction of its bootstrap spread."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    block: float
    """Mean block length (days) by Politis & White."""
    scale: float
    """Factor (>= 1) on the resampled statistics' deviations from the estimate:
    sqrt(S / (S - G / block)), S the flat-top long-run variance and G its
    first-moment sum; 1 where the correction is undefined."""


def block_rule(values: ArrayLike) -> BlockRule:
    """Mean block length of the stationary bootstrap by Politis & White (2004), with the
    Patton, Politis & White (2009) correction, and the factor that undoes the bootstrap's
    first-order variance bias `-G / block` (Politis & White 2004, eq. for the stationary
    bootstrap); block 1 and factor 1 for fewer than 4 values or a constant series.

    References:
        Politis, D. N. & White, H. (2004). Automatic Block-Length Selection for the
        Dependent Bootstrap. Econometric Reviews 23(1), 53-70; correction in Econometric
        Reviews 28(4), 372-375 (2009).
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    n = len(x)
    eps = x - x.mean() if n else x
    if n < 4 or not np.any(eps):
        return BlockRule(block=1.0, scale=1.0)
    b_max = math.ceil(min(3 * math.sqrt(n), n / 3))
    kn = max(5, int(math.log10(n)))
    m_max = min(math.ceil(math.sqrt(n)) + kn, n - 1)
    acv = np.array([eps[k:] @ eps[: n - k] / n for k in range(m_max + 1)])
    acf = np.abs(acv[1:] / acv[0])  # lags 1..m_max
    threshold = 2 * math.sqrt(math.log10(n) / n)
    m_hat = None
    for m in range(0, m_max - kn + 1):  # first m with kn insignificant lags after it
        if np.all(acf[m : m + kn] < threshold):
            m_hat = m
            break
    big_m = m_max if m_hat is None else min(2 * max(m_hat, 1), m_max)
    k = np.arange(1, big_m + 1)
    lam = np.where(k / big_m <= 0.5, 1.0, 2 * (1 - k / big_m))
    g = 2 * np.sum(lam * k * acv[k])
    long_run = acv[0] + 2 * np.sum(lam * acv[k])
    if long_run <= 0 or g == 0:
        return BlockRule(block=1.0, scale=1.0)
    b = (2 * g**2 / (2 * long_run**2)) ** (1 / 3) * n ** (1 / 3)
    b = float(min(max(b, 1.0), b_max))
    biased = long_run - g / b
    scale = math.sqrt(long_run / biased) if biased > 0 and g > 0 else 1.0
    return BlockRule(block=b, scale=scale)


def optimal_block_length(values: ArrayLike) -> float:
    """Mean block length of the stationary bootstrap (`block_rule(values).block`)."""
    return block_rule(values).block


def stationary_indices(
    n: int, block: float, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Day indices `(resamples, n)` of stationary-bootstrap paths of `n` days: each day
    starts a new block with probability 1 / `block` (the first day always), at a uniform
    day, else continues the previous day's block, running past the last day into the
    first. Block lengths are geometric with mean `block`."""
    new = rng.random((resamples, n)) < 1.0 / max(block, 1.0)
    new[:, 0] = True
    flat = new.ravel()
    first = np.flatnonzero(flat).astype(np.int32) % n  # day each block starts on
    shift = rng.integers(0, n, size=len(first), dtype=np.int32) - first
    day = np.tile(np.arange(n, dtype=np.int32), resamples)
    out = day + shift[np.cumsum(flat, dtype=np.int32) - 1]
    return (out % n).reshape(resamples, n)


def _resampled_sums(
    columns: np.ndarray, block: float, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Column sums `(resamples, c)` over stationary-bootstrap paths of the rows of
    `columns` `(n, c)`: for several columns, how often each path visits each day times
    the columns (one matrix product, however many seeds)."""
    n = columns.shape[0]
    idx = stationary_indices(n, block, resamples, rng)
    if columns.shape[1] <= 2:  # one series: gathering the days is faster
        return np.stack([col[idx].sum(axis=1) for col in columns.T], axis=1)
    rows = np.arange(resamples)[:, None] * n
    counts = np.bincount((rows + idx).ravel(), minlength=resamples * n)
    return counts.reshape(resamples, n).astype(np.float64) @ columns


def _moments(r: np.ndarray, stat: Statistic) -> np.ndarray:
    """Per-day columns `stat` is built from, for every column of `r` (days, k): r (mean),
    log(1 + r) (total return), r then r^2 (Sharpe: 2k columns)."""
    if stat == "mean":
        return r
    if stat == "total_return":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log1p(r)
    return np.hstack([r, r * r])


def _from_sums(sums: np.ndarray, n: int, stat: Statistic, periods_per_year: int) -> np.ndarray:
    """`stat` of each series from the column sums of its `_moments` over n days (last
    axis), averaged over the series; Sharpe is NaN where a series does not vary."""
    if stat == "mean":
        return (sums / n).mean(axis=-1)
    if stat == "total_return":
        return np.expm1(sums).mean(axis=-1)
    k = sums.shape[-1] // 2
    mean = sums[..., :k] / n
    sd = np.sqrt(np.maximum((sums[..., k:] - n * mean**2) / (n - 1), 0.0))
    tiny = 1e-12 * np.sqrt(sums[..., k:] / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(sd > tiny, mean / sd * math.sqrt(periods_per_year), np.nan)
    return out.mean(axis=-1)


def _series(returns: ArrayLike, benchmark: ArrayLike | None, statistic: Statistic) -> np.ndarray:
    """The series the statistic is computed on (active returns for the IR)."""
    r = _clean(returns, "returns")
    if statistic != "information_ratio":
        return r
    if benchmark is None:
        raise ConfigError("the information ratio needs the benchmark's daily returns")
    b = _clean(benchmark, "benchmark")[:, :1]
    if len(b) != len(r):
        raise ConfigError(f"returns ({len(r)} days) and benchmark ({len(b)}) differ in length")
    return r - b


def _check(statistic: str, confidence: float, resamples: int) -> None:
    if statistic not in STATISTICS:
        raise ConfigError(f"unknown statistic {statistic!r}; use one of {', '.join(STATISTICS)}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}; e.g. 0.95")
    if resamples < 1:
        raise ConfigError(f"resamples must be at least 1, got {resamples}")


def block_interval(
    returns: ArrayLike,
    statistic: Statistic = "mean",
    *,
    benchmark: ArrayLike | None = None,
    confidence: float = 0.95,
    resamples: int = BLOCK_RESAMPLES,
    seed: int = 0,
    block: float | None = None,
    periods_per_year: int = TRADING_DAYS_PER_YEAR,
) -> BlockInterval:
    """A statistic of daily returns with its stationary-block-bootstrap percentile
    interval (block length and bias correction by `block_rule` of the series, or of the
    columns' mean, unless a block length is given). `returns` is one series, or a (days,
    seeds) matrix of episodes over the same days, whose statistic is the mean of the
    columns' statistics, every column resampled on the same days. Fewer than `MIN_DAYS`
    days give NaN bounds.

    Raises:
        ConfigError: An unknown statistic, bad confidence or resamples, non-finite returns,
            or an IR without (or with a mislengthed) benchmark.
    """
    _check(statistic, confidence, resamples)
    x = _series(returns, benchmark, statistic)
    options = (confidence, resamples, seed, block, periods_per_year)
    return _interval(x, None, statistic, *options)


def paired_block_difference(
    a: ArrayLike,
    b: ArrayLike,
    statistic: Statistic = "mean",
    *,
    benchmark: ArrayLike | None = None,
    confidence: float = 0.95,
    resamples: int = BLOCK_RESAMPLES,
    seed: int = 0,
    block: float | None = None,
    periods_per_year: int = TRADING_DAYS_PER_YEAR,
) -> BlockInterval:
    """`statistic(a) - statistic(b)` for daily returns over the same days (each a series
    or a (days, seeds) matrix, as in `block_interval`), all resampled on the same
    stationary-bootstrap days (block rule from the daily difference of the column means
    unless a block length is given), with its percentile interval and two-sided p-value.

    Raises:
        ConfigError: As `block_interval`, or series of different lengths.
    """
    _check(statistic, confidence, resamples)
    x = _series(a, benchmark, statistic)
    y = _series(b, benchmark, statistic)
    if len(x) != len(y):
        raise ConfigError(f"paired series differ in length ({len(x)} and {len(y)} days)")
    options = (confidence, resamples, seed, block, periods_per_year)
    return _interval(x, y, statistic, *options)


def _interval(
    x: np.ndarray,
    y: np.ndarray | None,
    name: Statistic,
    confidence: float,
    resamples: int,
    seed: int,
    block: float | None,
    periods_per_year: int,
) -> BlockInterval:
    """The bootstrap of `stat(x)` (or `stat(x) - stat(y)` on the same days)."""
    n = len(x)
    nan = float("nan")
    stat: Statistic = "sharpe" if name == "information_ratio" else name
    cols = _moments(x, stat) if y is None else np.hstack([_moments(x, stat), _moments(y, stat)])
    w = (2 if stat == "sharpe" else 1) * x.shape[1]
    observed = cols.sum(axis=0)
    est = float(_from_sums(observed[:w], n, stat, periods_per_year))
    if y is not None:
        est -= float(_from_sums(observed[w:], n, stat, periods_per_year))
    rule = block_rule(x.mean(axis=1) if y is None else x.mean(axis=1) - y.mean(axis=1))
    b, scale = (rule.block, rule.scale) if block is None else (block, 1.0)
    base = {"statistic": name, "estimate": est, "block": b, "scale": scale, "days": n}
    base["confidence"] = confidence
    if n < MIN_DAYS or not np.isfinite(est):
        return BlockInterval(low=nan, high=nan, p_value=nan, **base)
    sums = _resampled_sums(cols, b, resamples, np.random.default_rng(seed))
    draws = _from_sums(sums[:, :w], n, stat, periods_per_year)
    if y is not None:
        draws = draws - _from_sums(sums[:, w:], n, stat, periods_per_year)
    draws = draws[np.isfinite(draws)]
    if len(draws) < resamples / 2:
        return BlockInterval(low=nan, high=nan, p_value=nan, **base)
    draws = est + scale * (draws - est)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    p = nan
    if y is not None:
        p = float((1 + np.sum(np.abs(draws - est) >= abs(est))) / (1 + len(draws)))
    return BlockInterval(low=float(low), high=float(high), p_value=p, **base)
