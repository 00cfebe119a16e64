"""Inference on Sharpe ratios of daily returns: the difference test of two strategies on
the same days, and the probabilistic and deflated Sharpe ratios.

All formulas work on per-period (daily, not annualised) Sharpe ratios `mean / std`
(ddof 1) of simple returns; annualise a reported ratio separately.

- `sharpe_difference`: Jobson & Korkie (1981) with Memmel's (2003) correction. For two
  return series over the same T days with Sharpe ratios SR_a, SR_b and correlation rho::

      V = (2 (1 - rho) + (SR_a^2 + SR_b^2 - 2 SR_a SR_b rho^2) / 2) / T
      z = (SR_a - SR_b) / sqrt(V),   p = 2 (1 - Phi(|z|))

  Assumes jointly normal, serially independent returns.
- `probabilistic_sharpe`: Bailey & López de Prado (2012), the probability that the true
  Sharpe ratio exceeds `benchmark` given skewness g3 and (non-excess) kurtosis g4::

      PSR = Phi((SR - SR*) sqrt(T - 1) / sqrt(1 - g3 SR + (g4 - 1) / 4 SR^2))

- `deflated_sharpe`: Bailey & López de Prado (2014), the PSR against the Sharpe ratio the
  best of N unskilled trials would show by luck::

      SR* = sqrt(V[SR]) ((1 - gamma) Phi^-1(1 - 1/N) + gamma Phi^-1(1 - 1/(N e)))

  with gamma the Euler-Mascheroni constant and V[SR] the variance of the N trials'
  Sharpe ratios; with N = 1 (or no spread) SR* = 0 and DSR = PSR.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict
from scipy import stats as scipy_stats

from tradebench.errors import ConfigError

EULER_GAMMA = 0.5772156649015329

__all__ = [
    "SharpeDifference",
    "deflated_sharpe",
    "expected_max_sharpe",
    "probabilistic_sharpe",
    "sharpe_difference",
]


class SharpeDifference(BaseModel):
    """The difference of two per-period Sharpe ratios on the same days and its test."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    sharpe_a: float
    """Per-period Sharpe ratio of the first series."""
    sharpe_b: float
    """Per-period Sharpe ratio of the second series."""
    difference: float
    """sharpe_a - sharpe_b (per period)."""
    z: float
    """Jobson-Korkie-Memmel statistic; NaN when undefined."""
    p_value: float
    """Two-sided p-value; NaN when undefined (fewer than 3 days, a constant series, or
    perfectly correlated series)."""
    days: int
    """Paired days."""


def _ratio(x: np.ndarray) -> float:
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return float(x.mean()) / sd if sd > 0 else float("nan")


def _finite(values: ArrayLike, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise ConfigError(f"{name} must be finite returns (drop missing days first)")
    return x


def sharpe_difference(a: ArrayLike, b: ArrayLike) -> SharpeDifference:
    """The Jobson-Korkie-Memmel test of equal Sharpe ratios for two return series over the
    same days (module docstring).

    Raises:
        ConfigError: Non-finite values or series of different lengths.
    """
    x, y = _finite(a, "a"), _finite(b, "b")
    if len(x) != len(y):
        raise ConfigError(f"paired series differ in length ({len(x)} and {len(y)} days)")
    t = len(x)
    sa, sb = _ratio(x), _ratio(y)
    nan = float("nan")
    z = p = nan
    if t >= 3 and math.isfinite(sa) and math.isfinite(sb):
        rho = float(np.corrcoef(x, y)[0, 1])
        var = (2 * (1 - rho) + (sa**2 + sb**2 - 2 * sa * sb * rho**2) / 2) / t
        if var > 0:
            z = (sa - sb) / math.sqrt(var)
            p = float(2 * scipy_stats.norm.sf(abs(z)))
    return SharpeDifference(sharpe_a=sa, sharpe_b=sb, difference=sa - sb, z=z, p_value=p, days=t)


def probabilistic_sharpe(returns: ArrayLike, benchmark: float = 0.0) -> float:
    """Probability that the true per-period Sharpe ratio exceeds `benchmark` (per
    period), by Bailey & López de Prado (2012); NaN with fewer than 3 returns or a constant
    series.

    Raises:
        ConfigError: Non-finite returns.
    """
    x = _finite(returns, "returns")
    sr = _ratio(x)
    if len(x) < 3 or not math.isfinite(sr):
        return float("nan")
    skew = float(scipy_stats.skew(x))
    kurt = float(scipy_stats.kurtosis(x, fisher=False))
    denom = 1 - skew * sr + (kurt - 1) / 4 * sr**2
    if denom <= 0:
        return float("nan")
    return float(scipy_stats.norm.cdf((sr - benchmark) * math.sqrt(len(x) - 1) / math.sqrt(denom)))


def expected_max_sharpe(n_trials: int, sharpe_variance: float) -> float:
    """The per-period Sharpe ratio the best of `n_trials` unskilled trials is expected to
    show (Bailey & López de Prado 2014); 0 for one trial or no spread.

    Raises:
        ConfigError: `n_trials` < 1 or a negative variance.
    """
    if n_trials < 1 or not sharpe_variance >= 0:
        raise ConfigError(
            f"need n_trials >= 1 and a variance >= 0, got {n_trials}, {sharpe_variance}"
        )
    if n_trials == 1 or sharpe_variance == 0:
        return 0.0
    norm = scipy_stats.norm
    expected = (1 - EULER_GAMMA) * norm.ppf(1 - 1 / n_trials) + EULER_GAMMA * norm.ppf(
        1 - 1 / (n_trials * math.e)
    )
    return float(math.sqrt(sharpe_variance) * expected)


def deflated_sharpe(returns: ArrayLike, n_trials: int, sharpe_variance: float) -> float:
    """The deflated Sharpe ratio: `probabilistic_sharpe` against `expected_max_sharpe`
    of `n_trials` with per-period Sharpe variance `sharpe_variance` across them.

    Raises:
        ConfigError: As `expected_max_sharpe`, or non-finite returns.
    """
    return probabilistic_sharpe(returns, expected_max_sharpe(n_trials, sharpe_variance))
