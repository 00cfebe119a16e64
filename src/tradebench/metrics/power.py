"""Power before a run: minimum detectable differences and the sample needed for a target.

Two-sided tests at level `alpha`, power `power` (z_a = Phi^-1(1 - alpha / 2), z_b =
Phi^-1(power)):

- Over days, mean daily return difference of two agents on the same T days, daily
  difference sd `sd` (days independent): MDE = (z_a + z_b) sd / sqrt(T); annualised
  (arithmetic) by `periods_per_year`.
- Over days, Sharpe difference (Jobson-Korkie-Memmel at Sharpe ratios near 0, daily
  returns correlated `rho`): se = sqrt(2 (1 - rho) / T) per period; MDE = (z_a + z_b) se,
  annualised by sqrt(`periods_per_year`).
- Over seeds, paired t-test of n per-seed differences with sd `sd`:
  MDE = (t(1 - alpha / 2, n - 1) + t(power, n - 1)) sd / sqrt(n) (the usual approximation
  to the noncentral t); undefined for n < 2.
"""

from __future__ import annotations

import math

from scipy import stats as scipy_stats

from tradebench.errors import ConfigError
from tradebench.metrics.returns import TRADING_DAYS_PER_YEAR

MAX_SEEDS = 10_000
"""Largest seed count `seeds_needed` searches."""

__all__ = [
    "days_for_return",
    "days_for_sharpe",
    "mde_daily_return",
    "mde_seed_mean",
    "mde_sharpe",
    "seeds_needed",
]


def _z(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ConfigError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    return float(scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(power))


def mde_daily_return(
    sd: float,
    days: int,
    alpha: float = 0.05,
    power: float = 0.8,
    periods_per_year: int = TRADING_DAYS_PER_YEAR,
) -> float:
    """Smallest annual (arithmetic) return difference detectable over `days` paired days
    with daily difference sd `sd`; NaN for no days."""
    if days < 1:
        return float("nan")
    return _z(alpha, power) * sd / math.sqrt(days) * periods_per_year


def mde_sharpe(
    days: int,
    rho: float,
    alpha: float = 0.05,
    power: float = 0.8,
    periods_per_year: int = TRADING_DAYS_PER_YEAR,
) -> float:
    """Smallest annualised Sharpe difference detectable over `days` paired days with daily
    return correlation `rho`; NaN for no days."""
    if not -1 <= rho < 1:
        raise ConfigError(f"rho must be in [-1, 1), got {rho}")
    if days < 1:
        return float("nan")
    return _z(alpha, power) * math.sqrt(2 * (1 - rho) / days) * math.sqrt(periods_per_year)


def days_for_return(
    target: float,
    sd: float,
    alpha: float = 0.05,
    power: float = 0.8,
    periods_per_year: int = TRADING_DAYS_PER_YEAR,
) -> int:
    """Paired days needed to detect an annual return difference `target`."""
    if target <= 0:
        raise ConfigError(f"the target difference must be > 0, got {target}")
    return math.ceil((_z(alpha, power) * sd * periods_per_year / target) ** 2)


def days_for_sharpe(
    target: float,
    rho: float,
    alpha: float = 0.05,
    power: float = 0.8,
    periods_per_year: int = TRADING_DAYS_PER_YEAR,
) -> int:
    """Paired days needed to detect an annualised Sharpe difference `target`."""
    if target <= 0:
        raise ConfigError(f"the target difference must be > 0, got {target}")
    if not -1 <= rho < 1:
        raise ConfigError(f"rho must be in [-1, 1), got {rho}")
    return math.ceil(2 * (1 - rho) * periods_per_year * (_z(alpha, power) / target) ** 2)


def mde_seed_mean(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean difference a paired t-test over `n` seeds detects; NaN for n < 2."""
    _z(alpha, power)
    if n < 2:
        return float("nan")
    t = scipy_stats.t
    return float((t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * sd / math.sqrt(n))


def seeds_needed(target: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Fewest seeds (pairs) whose paired t-test detects a mean difference `target`.

    Raises:
        ConfigError: A target <= 0, or more than `MAX_SEEDS` needed.
    """
    if target <= 0:
        raise ConfigError(f"the target difference must be > 0, got {target}")
    for n in range(2, MAX_SEEDS + 1):
        if mde_seed_mean(sd, n, alpha, power) <= target:
            return n
    raise ConfigError(f"more than {MAX_SEEDS} seeds needed for {target} at sd {sd}")
