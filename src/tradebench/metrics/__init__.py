"""Metrics of stored runs: the metric panel, calibration, confidence intervals and tests
(`metrics.stats`; the block bootstrap, Sharpe inference and power in their own modules).

Every metric is a pure function of arrays or the engine's tables that returns a plain
`float`, NaN when the input is too short to define it (documented per function). The
panel turns NaN into `None` (`null` in `metrics.json`). Formulas: `docs/metrics.md`.
"""

from tradebench.metrics.behaviour import abstention_rate, annualized_turnover, cash_ratio, hhi
from tradebench.metrics.calibration import CALIBRATION_BINS, brier, calibration_bins, ece
from tradebench.metrics.panel import SCHEMA_VERSION, BenchmarkPanel, MetricPanel, compute_panel
from tradebench.metrics.reliability import (
    FAULT_COLUMNS,
    FAULT_COUNT_COLUMNS,
    fallback_steps,
    malformed_reply_rate,
    parse_failure_rate,
    step_total,
    tool_validity_rate,
)
from tradebench.metrics.returns import (
    TRADING_DAYS_PER_YEAR,
    ZERO_STD,
    information_ratio,
    max_drawdown,
    sharpe,
    simple_returns,
    total_return,
)
from tradebench.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    Interval,
    PairedTest,
    binomial_greater,
    bootstrap_mean_ci,
    holm_adjust,
    mcnemar_exact,
    paired_t,
    t_interval,
    wilson_interval,
)

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "CALIBRATION_BINS",
    "FAULT_COLUMNS",
    "FAULT_COUNT_COLUMNS",
    "SCHEMA_VERSION",
    "TRADING_DAYS_PER_YEAR",
    "ZERO_STD",
    "BenchmarkPanel",
    "Interval",
    "MetricPanel",
    "PairedTest",
    "abstention_rate",
    "annualized_turnover",
    "binomial_greater",
    "bootstrap_mean_ci",
    "brier",
    "calibration_bins",
    "cash_ratio",
    "compute_panel",
    "ece",
    "fallback_steps",
    "hhi",
    "holm_adjust",
    "information_ratio",
    "malformed_reply_rate",
    "max_drawdown",
    "mcnemar_exact",
    "paired_t",
    "parse_failure_rate",
    "sharpe",
    "simple_returns",
    "step_total",
    "t_interval",
    "tool_validity_rate",
    "total_return",
    "wilson_interval",
]
