"""Return and risk metrics of a NAV path: total return, Sharpe, max drawdown, information ratio.

Conventions (see `docs/metrics.md`):

* A run's NAV series is end-of-day; the start capital comes separately, so the first
  day's return is `nav[0] / initial - 1` and the path has as many returns as steps.
* Returns are simple (not log) returns; the risk-free rate is 0.
* Annualisation is an explicit `periods_per_year`; `TRADING_DAYS_PER_YEAR` is the daily
  default.
* Too-short input gives NaN, never an exception: fewer than 2 returns for the ratios, an
  empty path for total return and drawdown. NaN anywhere in the input gives NaN.
* Every function returns a plain `float`, whatever array-like it was given.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from tradebench.errors import ConfigError, DataError
from tradebench.metrics._arrays import as_floats, same_length

TRADING_DAYS_PER_YEAR = 252
"""Periods per year of daily returns: the annualisation default for every daily metric."""

ZERO_STD = 1e-12
"""Per-period standard deviation at or below which a return series counts as constant.

Returns that are equal in exact arithmetic differ in the last bits once computed from
float NAVs (0.04 - 0.03 != 0.02 - 0.01), leaving a std of ~1e-17 and a ratio of ~1e16.
Returns are dimensionless, so one absolute threshold fits every series; real daily returns
have standard deviations many orders of magnitude larger.
"""

__all__ = [
    "TRADING_DAYS_PER_YEAR",
    "ZERO_STD",
    "information_ratio",
    "max_drawdown",
    "sharpe",
    "simple_returns",
    "total_return",
]


def check_periods_per_year(periods_per_year: float) -> None:
    """Raise `ConfigError` unless `periods_per_year` is a positive finite number."""
    if not (np.isfinite(periods_per_year) and periods_per_year > 0):
        raise ConfigError(
            f"periods_per_year must be a positive number, got {periods_per_year!r}; "
            f"use {TRADING_DAYS_PER_YEAR} for daily steps"
        )


def _check_initial(initial: float, name: str) -> float:
    value = float(initial)
    if not (np.isfinite(value) and value > 0):
        raise DataError(f"{name} must be a positive finite number, got {initial!r}")
    return value


def simple_returns(levels: ArrayLike, initial: float | None = None) -> np.ndarray:
    """Simple period returns of a level series (NAV or index close).

    With `initial`, the first return is measured against it::

        r_0 = levels_0 / initial - 1,   r_t = levels_t / levels_{t-1} - 1   (t >= 1)

    so there are `len(levels)` returns. Without it the first level has no predecessor and
    there are `len(levels) - 1` returns (none for fewer than two levels).

    Args:
        levels: End-of-period levels, oldest first.
        initial: Level just before the first period (start capital, previous close).

    Returns:
        A new float array of returns (NaN where a level is NaN).

    Raises:
        DataError: `initial` is given but is not a positive finite number.
    """
    x = as_floats(levels, "levels")
    if initial is not None:
        x = np.concatenate(([_check_initial(initial, "initial")], x))
    if len(x) < 2:
        return np.empty(0, dtype=np.float64)
    return x[1:] / x[:-1] - 1.0


def total_return(nav: ArrayLike, initial: float) -> float:
    """Geometric total return of a NAV path: ``nav[-1] / initial - 1``.

    Equals ``prod(1 + r_t) - 1`` over `simple_returns(nav, initial)` (empyrical's
    `cum_returns_final`) up to floating-point rounding.

    Args:
        nav: End-of-day NAV, oldest first.
        initial: Capital (or level) before the first day.

    Returns:
        The total return; NaN for an empty path or a NaN final NAV.

    Raises:
        DataError: `initial` is not a positive finite number.

    References:
        https://en.wikipedia.org/wiki/Rate_of_return
    """
    start = _check_initial(initial, "initial")
    x = as_floats(nav, "nav")
    if len(x) == 0:
        return float("nan")
    return float(x[-1] / start - 1.0)


def _annualised_ratio(x: np.ndarray, periods_per_year: float) -> float:
    """``mean(x) / std(x, ddof=1) * sqrt(periods_per_year)``; NaN if too short or constant."""
    check_periods_per_year(periods_per_year)
    if len(x) < 2 or not np.isfinite(x).all():
        return float("nan")
    std = float(x.std(ddof=1))
    if std <= ZERO_STD:
        return float("nan")
    return float(x.mean() / std * np.sqrt(periods_per_year))


def sharpe(returns: ArrayLike, periods_per_year: float = TRADING_DAYS_PER_YEAR) -> float:
    """Annualised Sharpe ratio with a zero risk-free rate.

    ::

        sharpe = mean(r) / std(r, ddof=1) * sqrt(periods_per_year)

    Args:
        returns: Simple period returns (for a run: `simple_returns(nav, initial_cash)`,
            which includes the first day's return against the start capital).
        periods_per_year: Periods per year of `returns` (`TRADING_DAYS_PER_YEAR` for daily).

    Returns:
        The ratio; NaN when there are fewer than 2 returns, when all returns are equal
        (standard deviation at most `ZERO_STD`), or when any return is NaN.

    Raises:
        ConfigError: `periods_per_year` is not positive.

    References:
        Sharpe, W. F. (1994). The Sharpe Ratio. Journal of Portfolio Management 21(1).
        https://web.stanford.edu/~wfsharpe/art/sr/sr.htm
    """
    return _annualised_ratio(as_floats(returns, "returns"), periods_per_year)


def max_drawdown(nav: ArrayLike, initial: float) -> float:
    """Largest peak-to-trough decline of the NAV path, as a positive fraction.

    The path starts at `initial`, so a loss on the first day is a drawdown::

        w = [initial, nav_0, ..., nav_{n-1}],  peak_t = max_{s <= t} w_s
        max_drawdown = max_t (1 - w_t / peak_t)

    Args:
        nav: End-of-day NAV, oldest first.
        initial: Capital (or level) before the first day; it is the first peak.

    Returns:
        The drawdown, in [0, 1] for a non-negative NAV (0 for a path that never falls
        below its running peak); NaN for an empty path or any NaN NAV.

    Raises:
        DataError: `initial` is not a positive finite number.

    References:
        https://en.wikipedia.org/wiki/Drawdown_(economics)
    """
    start = _check_initial(initial, "initial")
    x = as_floats(nav, "nav")
    if len(x) == 0 or not np.isfinite(x).all():
        return float("nan")
    wealth = np.concatenate(([start], x))
    peak = np.maximum.accumulate(wealth)
    return float(np.max(1.0 - wealth / peak))


def information_ratio(
    returns: ArrayLike,
    benchmark_returns: ArrayLike,
    periods_per_year: float = TRADING_DAYS_PER_YEAR,
) -> float:
    """Annualised information ratio of aligned returns against a benchmark.

    With active return ``a_t = r_t - b_t``::

        information_ratio = mean(a) / std(a, ddof=1) * sqrt(periods_per_year)

    i.e. annualised mean active return (x periods) over annualised tracking error
    (x sqrt(periods)).

    Args:
        returns: Simple period returns of the strategy.
        benchmark_returns: Simple period returns of the benchmark for the same periods,
            in the same order (align before calling; see `compute_panel`).
        periods_per_year: Periods per year (`TRADING_DAYS_PER_YEAR` for daily).

    Returns:
        The ratio; NaN when there are fewer than 2 aligned periods, when the active
        return is constant (tracking error at most `ZERO_STD`), or when any input is NaN.

    Raises:
        DataError: The two series differ in length.
        ConfigError: `periods_per_year` is not positive.

    References:
        Grinold, R. C. & Kahn, R. N. (2000). Active Portfolio Management, 2nd ed., ch. 5.
        https://en.wikipedia.org/wiki/Information_ratio
    """
    r = as_floats(returns, "returns")
    b = as_floats(benchmark_returns, "benchmark_returns")
    same_length(r, b, "returns and benchmark_returns")
    return _annualised_ratio(r - b, periods_per_year)
