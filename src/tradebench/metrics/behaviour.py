"""Behaviour metrics of a run: turnover, concentration (HHI), cash ratio, abstention.

Each is a mean over the run's steps, so runs of different lengths compare directly. An
empty run (no steps) gives NaN; NaN in a required input gives NaN. Every function returns
a plain `float`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from tradebench.errors import DataError
from tradebench.metrics._arrays import as_floats, same_length
from tradebench.metrics.returns import TRADING_DAYS_PER_YEAR, check_periods_per_year

__all__ = ["abstention_rate", "annualized_turnover", "cash_ratio", "hhi"]


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if len(x) else float("nan")


def annualized_turnover(
    turnover: ArrayLike, periods_per_year: float = TRADING_DAYS_PER_YEAR
) -> float:
    """Annualised one-way turnover: ``mean_t(turnover_t) * periods_per_year``.

    Args:
        turnover: Per-step turnover, ``sum_i |traded value_i| / NAV at the previous
            close`` (the sum of absolute weight changes caused by trading that step).
        periods_per_year: Steps per year (`TRADING_DAYS_PER_YEAR` for daily steps).

    Returns:
        Turnover per year (1.0 = the portfolio's value traded once a year); NaN for no
        steps or any NaN turnover.

    Raises:
        ConfigError: `periods_per_year` is not positive.

    References:
        https://en.wikipedia.org/wiki/Turnover_(finance)
    """
    check_periods_per_year(periods_per_year)
    return _mean(as_floats(turnover, "turnover")) * float(periods_per_year)


def hhi(positions: pd.DataFrame, dates: ArrayLike) -> float:
    """Mean Herfindahl-Hirschman index of the holding weights over the steps.

    ::

        HHI_t = sum_i w_{i,t}^2,   hhi = mean over steps t of HHI_t

    Weights are ``shares x close / NAV`` of stock holdings after the close; cash is not a
    holding, so a half-cash, one-stock book has HHI 0.25 and an all-cash step 0. The index
    is not renormalised by the invested fraction (see `cash_ratio` for that).

    Args:
        positions: One row per holding and date with columns `date` and `weight`; dates
            with no holdings have no rows.
        dates: The run's step dates (one per step); a date without position rows
            contributes 0.

    Returns:
        The mean HHI, in [1/n, 1] for a fully invested long-only book of n names; NaN for
        no steps or any NaN weight.

    Raises:
        DataError: `positions` lacks `date`/`weight`, or has a date that is not a step.

    References:
        https://en.wikipedia.org/wiki/Herfindahl%E2%80%93Hirschman_index
    """
    missing = {"date", "weight"} - set(positions.columns)
    if missing:
        raise DataError(f"positions lacks columns {sorted(missing)}; pass the run's positions")
    steps = pd.DatetimeIndex(pd.to_datetime(np.asarray(dates)))
    if len(steps) == 0:
        return float("nan")
    pos_dates = pd.to_datetime(positions["date"])
    stray = pd.DatetimeIndex(pos_dates.unique()).difference(steps)
    if len(stray):
        raise DataError(
            f"positions has {len(stray)} date(s) that are not steps, e.g. "
            f"{stray[0].date()}; pass positions and steps of the same run"
        )
    weights = as_floats(positions["weight"], "weight")
    if np.isnan(weights).any():
        return float("nan")
    per_step = pd.Series(weights**2).groupby(pos_dates.to_numpy()).sum()
    return float(per_step.reindex(steps, fill_value=0.0).mean())


def cash_ratio(cash: ArrayLike, nav: ArrayLike) -> float:
    """Mean share of NAV held in cash: ``mean_t(cash_t / nav_t)``.

    Args:
        cash: End-of-day cash.
        nav: End-of-day NAV of the same steps.

    Returns:
        The mean ratio (1.0 = always all cash); NaN for no steps or any NaN input.

    Raises:
        DataError: `cash` and `nav` differ in length.
    """
    c = as_floats(cash, "cash")
    v = as_floats(nav, "nav")
    same_length(c, v, "cash and nav")
    with np.errstate(divide="ignore", invalid="ignore"):
        return _mean(c / v)


def abstention_rate(n_orders: ArrayLike) -> float:
    """Share of steps on which the agent sent no order: ``mean_t(1[n_orders_t == 0])``.

    A step whose orders were all rejected is not an abstention: the agent acted.

    Args:
        n_orders: Orders the agent sent on each step.

    Returns:
        The rate in [0, 1]; NaN for no steps or any NaN count.
    """
    n = as_floats(n_orders, "n_orders")
    if len(n) == 0 or np.isnan(n).any():
        return float("nan")
    return float((n == 0).mean())
