"""The metric panel of one run: every headline metric from the engine's three tables.

`compute_panel(steps, positions, orders, initial_cash=...)` reads the tables the backtest
engine writes and returns a frozen `MetricPanel`; `MetricPanel.to_json()` is what the CLI
writes to `metrics.json`. A metric that is undefined for the run (too few steps, a
baseline's calibration, no tool calls) is `None` in the panel and `null` in the JSON.
The formulas are in the metric functions' docstrings and in `docs/metrics.md`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, BeforeValidator, ConfigDict

from tradebench.errors import DataError
from tradebench.metrics._arrays import as_floats
from tradebench.metrics.behaviour import abstention_rate, annualized_turnover, cash_ratio, hhi
from tradebench.metrics.calibration import brier, ece
from tradebench.metrics.reliability import (
    FAULT_COLUMNS,
    fallback_steps,
    malformed_reply_rate,
    parse_failure_rate,
    step_total,
    tool_validity_rate,
)
from tradebench.metrics.returns import (
    TRADING_DAYS_PER_YEAR,
    check_periods_per_year,
    information_ratio,
    max_drawdown,
    sharpe,
    simple_returns,
    total_return,
)

SCHEMA_VERSION = 3
"""Version of the `MetricPanel` layout; bump it (and migrate) when fields change. Version 3
added the endpoint-fault totals; files of versions 1 and 2 read with them null."""

STEP_COLUMNS = ("date", "nav", "cash", "benchmark_close", "n_orders", "turnover")
"""Columns `steps` must have."""
LLM_STEP_COLUMNS = (
    "parse_failures",
    "fallback",
    "tool_calls",
    "tool_calls_valid",
    *FAULT_COLUMNS,
)
"""Nullable LLM-only step columns; an absent column counts as all null."""
POSITION_COLUMNS = ("date", "weight")
"""Columns `positions` must have (unless it has no rows)."""
ORDER_COLUMNS = ("confidence", "outcome")
"""Nullable order columns used for calibration; an absent column counts as all null."""

__all__ = ["SCHEMA_VERSION", "BenchmarkPanel", "MetricPanel", "compute_panel"]


def _finite_or_none(value: Any) -> Any:
    """NaN and +-inf mean "undefined": store them as None (JSON null)."""
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return None
    return value


Metric = Annotated[float | None, BeforeValidator(_finite_or_none)]
"""A metric value: a finite float, or None where the metric is undefined for the run."""


def _count_or_none(value: Any) -> Any:
    """A whole-number total as an int; NaN (undefined) as None."""
    value = _finite_or_none(value)
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return int(value)
    return value


Count = Annotated[int | None, BeforeValidator(_count_or_none)]
"""A total count: an int, or None where it is undefined for the run (a baseline)."""


class BenchmarkPanel(BaseModel):
    """The benchmark index's own return metrics over the run's steps.

    Its start level is `benchmark_start` when given (the close before the first step),
    else the first step's close, which then covers one period fewer than the agent.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    total_return: Metric
    """Index total return: last close / start level - 1."""
    sharpe: Metric
    """Annualised Sharpe ratio (rf = 0, ddof = 1) of the index's daily returns."""
    max_drawdown: Metric
    """Largest peak-to-trough decline of the index close (start level included), >= 0."""


class MetricPanel(BaseModel):
    """Headline metrics of one run, as stored in `metrics.json`."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = SCHEMA_VERSION
    """Layout version of this record."""
    total_return: Metric
    """Geometric total return: final NAV / initial cash - 1."""
    sharpe: Metric
    """Annualised Sharpe ratio (rf = 0, ddof = 1) of daily NAV returns, the first day's
    return measured against the initial cash; None with fewer than 2 steps or constant
    returns."""
    max_drawdown: Metric
    """Largest peak-to-trough NAV decline as a positive fraction; the initial cash is the
    first peak."""
    information_ratio: Metric
    """Annualised mean daily excess return over the benchmark divided by its annualised
    std (ddof = 1); without `benchmark_start` the first day is dropped."""
    annualized_turnover: Metric
    """Mean per-step turnover (traded value / previous NAV) times periods per year."""
    hhi: Metric
    """Mean over steps of the sum of squared stock weights (cash excluded; all-cash = 0)."""
    cash_ratio: Metric
    """Mean over steps of cash / NAV."""
    abstention_rate: Metric
    """Share of steps on which the agent sent no order."""
    parse_failure_rate: Metric
    """Share of decision steps whose action still failed validation after the retries (the
    step fell back to no trade), in [0, 1]; None for a baseline (column all null)."""
    fallback_steps: Metric = None
    """Decision steps that fell back to no trade; None for a baseline."""
    malformed_reply_rate: Metric = None
    """Unreadable model replies per decision step (retries included; can exceed 1)."""
    ece: Metric
    """Expected calibration error of order confidences (10 equal-width bins); None when
    no order has both a confidence and an outcome."""
    tool_validity_rate: Metric
    """Valid tool calls / tool calls; None when the run made no tool calls."""
    brier: Metric
    """Mean squared error of order confidence against outcome; None as for `ece`."""
    benchmark: BenchmarkPanel
    """The benchmark index's own metrics over the same steps."""
    faults_429: Count = None
    """HTTP 429 answers the episode's model calls met (each retried); None for a baseline
    or steps recorded before faults were. Replies from the cache count 0."""
    faults_5xx: Count = None
    """Retryable HTTP 5xx answers met."""
    faults_timeout: Count = None
    """Attempts that ran past the per-attempt timeout."""
    faults_connection: Count = None
    """Attempts whose connection failed or was dropped."""
    faults_other: Count = None
    """Attempts answered with another retryable status (408, 409, 425)."""
    http_retries: Count = None
    """HTTP attempts after the first, over every model call of the episode."""
    retry_wait_s: Metric = None
    """Seconds of backoff slept between attempts."""
    failed_attempt_s: Metric = None
    """Wall seconds spent in failed attempts."""
    tool_choice_fallbacks: Count = None
    """Steps down the forced-call ladder (a `tool_choice` form rejected or ignored)."""

    def to_json(self) -> str:
        """The `metrics.json` text: indented JSON, undefined metrics as `null`."""
        return self.model_dump_json(indent=2) + "\n"


def _require(frame: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"{name} lacks column(s) {missing}; pass the {name} table the backtest wrote"
        )


def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column as floats; an absent nullable column is all NaN."""
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return as_floats(frame[name], name)


def _check_steps(steps: pd.DataFrame) -> pd.DatetimeIndex:
    """Validate the step table; return its dates."""
    _require(steps, STEP_COLUMNS, "steps")
    dates = pd.DatetimeIndex(pd.to_datetime(steps["date"]))
    if not (dates.is_monotonic_increasing and dates.is_unique):
        raise DataError("steps dates must be unique and increasing; pass one row per day in order")
    for name in ("nav", "cash"):
        bad = ~np.isfinite(as_floats(steps[name], name))
        if bad.any():
            raise DataError(
                f"steps.{name} is missing or infinite on {dates[bad][0].date()}; "
                "the run's step records are incomplete"
            )
    return dates


def _benchmark_panel(
    close: np.ndarray, benchmark_start: float | None, periods_per_year: float
) -> BenchmarkPanel:
    """The index's own metrics; its start is `benchmark_start`, else the first close."""
    if benchmark_start is None:
        if len(close) == 0 or not (np.isfinite(close[0]) and close[0] > 0):
            nan = float("nan")
            return BenchmarkPanel(total_return=nan, sharpe=nan, max_drawdown=nan)
        start, path = float(close[0]), close[1:]
    else:
        start, path = benchmark_start, close
    return BenchmarkPanel(
        total_return=total_return(path, start),
        sharpe=sharpe(simple_returns(path, start), periods_per_year),
        max_drawdown=max_drawdown(path, start),
    )


def compute_panel(
    steps: pd.DataFrame,
    positions: pd.DataFrame,
    orders: pd.DataFrame,
    *,
    initial_cash: float,
    benchmark_start: float | None = None,
    periods_per_year: float = TRADING_DAYS_PER_YEAR,
) -> MetricPanel:
    """Compute the metric panel of one run from the engine's tables.

    Args:
        steps: One row per step with `date, nav, cash, benchmark_close, n_orders,
            turnover` and the nullable `parse_failures, fallback, tool_calls,
            tool_calls_valid` and endpoint-fault columns (`FAULT_COLUMNS`).
        positions: Holdings after each close with `date` and `weight` (no rows on
            all-cash days).
        orders: One row per order with the nullable `confidence` and `outcome`.
        initial_cash: Capital before the first step: the first daily return's base and
            the first peak of the drawdown.
        benchmark_start: Benchmark close on the day before the first step. Without it
            the information ratio drops the first day (its benchmark return is unknown)
            and the benchmark's own metrics start from the first close.
        periods_per_year: Steps per year (`TRADING_DAYS_PER_YEAR` for daily steps).

    Returns:
        The frozen panel; undefined metrics are None.

    Raises:
        DataError: A required column is missing, step dates are not unique and
            increasing, NAV or cash is missing, a position date is not a step, or an
            input is out of range (see the metric functions).
        ConfigError: `periods_per_year` is not positive.
    """
    check_periods_per_year(periods_per_year)
    dates = _check_steps(steps)
    if len(positions) == 0:
        positions = pd.DataFrame({"date": pd.to_datetime([]), "weight": np.empty(0)})
    _require(positions, POSITION_COLUMNS, "positions")
    nav = as_floats(steps["nav"], "nav")
    close = as_floats(steps["benchmark_close"], "benchmark_close")
    returns = simple_returns(nav, initial_cash)
    bench_returns = simple_returns(close, benchmark_start)
    active_days = returns if benchmark_start is not None else returns[1:]
    confidence, outcome = _column(orders, "confidence"), _column(orders, "outcome")
    return MetricPanel(
        total_return=total_return(nav, initial_cash),
        sharpe=sharpe(returns, periods_per_year),
        max_drawdown=max_drawdown(nav, initial_cash),
        information_ratio=information_ratio(active_days, bench_returns, periods_per_year),
        annualized_turnover=annualized_turnover(steps["turnover"], periods_per_year),
        hhi=hhi(positions, dates),
        cash_ratio=cash_ratio(steps["cash"], nav),
        abstention_rate=abstention_rate(steps["n_orders"]),
        parse_failure_rate=parse_failure_rate(_column(steps, "fallback")),
        fallback_steps=fallback_steps(_column(steps, "fallback")),
        malformed_reply_rate=malformed_reply_rate(_column(steps, "parse_failures")),
        ece=ece(confidence, outcome),
        tool_validity_rate=tool_validity_rate(
            _column(steps, "tool_calls"), _column(steps, "tool_calls_valid")
        ),
        brier=brier(confidence, outcome),
        benchmark=_benchmark_panel(close, benchmark_start, periods_per_year),
        **{name: step_total(_column(steps, name), name) for name in FAULT_COLUMNS},
    )
