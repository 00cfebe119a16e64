"""`compute_panel` on small hand-computed runs, edge cases and the JSON record."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from tradebench.errors import ConfigError, DataError
from tradebench.metrics import (
    FAULT_COLUMNS,
    SCHEMA_VERSION,
    BenchmarkPanel,
    MetricPanel,
    compute_panel,
)

KEYS = [
    "total_return",
    "sharpe",
    "max_drawdown",
    "information_ratio",
    "annualized_turnover",
    "hhi",
    "cash_ratio",
    "abstention_rate",
    "parse_failure_rate",
    "fallback_steps",
    "malformed_reply_rate",
    "ece",
    "tool_validity_rate",
    "brier",
]
DATES = pd.to_datetime(["2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"])


def _int(values: list) -> pd.Series:
    return pd.Series(values, dtype="Int64")


def llm_steps() -> pd.DataFrame:
    """Four days from 100: NAV returns +10%, -10%, +10%, 0%."""
    return pd.DataFrame(
        {
            "date": DATES,
            "nav": [110.0, 99.0, 108.9, 108.9],
            "cash": [55.0, 99.0, 0.0, 108.9],
            "benchmark_close": [10.1, 10.1, 10.605, 10.605],
            "n_orders": [2, 1, 1, 0],
            "n_rejected": [0, 0, 1, 0],
            "turnover": [1.0, 0.5, 1.0, 0.0],
            "parse_failures": _int([0, 2, 1, 0]),
            "fallback": pd.Series([False, True, False, False], dtype="boolean"),
            "tool_calls": _int([3, 0, 2, 1]),
            "tool_calls_valid": _int([2, 0, 2, 0]),
            "retries": _int([0, 2, 1, 0]),
        }
    )


def baseline_steps() -> pd.DataFrame:
    steps = llm_steps()
    for col in ("parse_failures", "fallback", "tool_calls", "tool_calls_valid", "retries"):
        steps[col] = _int([None] * 4)
    return steps


def positions() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "date": DATES[[0, 0, 2, 2]],
            "symbol": ["A", "B", "A", "B"],
            "shares": [100, 100, 300, 200],
            "shares_available": [0, 0, 0, 0],
            "close": [0.275, 0.275, 0.2178, 0.2178],
            "weight": [0.25, 0.25, 0.6, 0.4],
        }
    )


def llm_orders() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "date": DATES[[0, 0, 1, 2, 2]],
            "symbol": ["A", "B", "A", "A", "B"],
            "side": ["BUY", "BUY", "SELL", "BUY", "BUY"],
            "status": ["filled", "filled", "filled", "filled", "rejected"],
            "confidence": [0.9, 0.7, 0.75, 0.2, np.nan],
            "outcome": [1.0, 0.0, 1.0, np.nan, 1.0],
        }
    )


def baseline_orders() -> pd.DataFrame:
    orders = llm_orders()
    orders["confidence"] = np.nan
    orders["outcome"] = [1.0, 0.0, 1.0, np.nan, np.nan]
    return orders


# Agent returns r = (0.1, -0.1, 0.1, 0): mean 0.025, squared deviations sum 0.0275.
SHARPE = 0.025 / math.sqrt(0.0275 / 3) * math.sqrt(252)


def test_llm_run_hand() -> None:
    p = compute_panel(llm_steps(), positions(), llm_orders(), initial_cash=100.0)
    assert p.total_return == pytest.approx(0.089)
    assert p.sharpe == pytest.approx(SHARPE)
    assert p.max_drawdown == pytest.approx(0.1)
    # No benchmark_start: day 1 dropped. Days 2-4: r = (-0.1, 0.1, 0), b = (0, 0.05, 0),
    # active = (-0.1, 0.05, 0): mean -1/60, var (ddof=1) 0.0175/3 -> IR = -2 sqrt(3).
    assert p.information_ratio == pytest.approx(-2 * math.sqrt(3))
    assert p.annualized_turnover == pytest.approx(0.625 * 252)
    assert p.hhi == pytest.approx((0.125 + 0.52) / 4)
    assert p.cash_ratio == pytest.approx(0.625)
    assert p.abstention_rate == 0.25
    # One of four decision steps fell back (its action never validated): 1/4, not 3/4.
    assert p.parse_failure_rate == 0.25 and p.fallback_steps == 1
    assert p.malformed_reply_rate == 0.75  # 0 + 2 + 1 + 0 unreadable replies over 4 steps
    assert p.tool_validity_rate == pytest.approx(4 / 6)
    assert p.ece == pytest.approx(0.1 / 3 + 2 / 3 * 0.225)
    assert p.brier == pytest.approx(0.1875)
    # Benchmark from its first close 10.1: closes 10.1, 10.605, 10.605 -> r = (0, 0.05, 0).
    assert p.benchmark.total_return == pytest.approx(0.05)
    assert p.benchmark.sharpe == pytest.approx(math.sqrt(84))
    assert p.benchmark.max_drawdown == 0.0


def test_benchmark_start_uses_first_day() -> None:
    p = compute_panel(
        llm_steps(), positions(), llm_orders(), initial_cash=100.0, benchmark_start=10.0
    )
    # b = (0.01, 0, 0.05, 0); active = (0.09, -0.1, 0.05, 0): mean 0.01, sq. dev. sum 0.0202.
    assert p.information_ratio == pytest.approx(0.01 / math.sqrt(0.0202 / 3) * math.sqrt(252))
    assert p.benchmark.total_return == pytest.approx(0.0605)
    # b mean 0.015, squared deviations sum 0.0017.
    assert p.benchmark.sharpe == pytest.approx(0.015 / math.sqrt(0.0017 / 3) * math.sqrt(252))
    assert p.benchmark.max_drawdown == 0.0
    assert p.sharpe == pytest.approx(SHARPE)


def test_baseline_reliability_is_none() -> None:
    p = compute_panel(baseline_steps(), positions(), baseline_orders(), initial_cash=100.0)
    assert p.parse_failure_rate is None
    assert p.fallback_steps is None and p.malformed_reply_rate is None
    assert p.tool_validity_rate is None
    assert p.ece is None
    assert p.brier is None
    assert p.sharpe == pytest.approx(SHARPE)


def test_object_columns_of_none_count_as_null() -> None:
    # As written by a baseline: plain None in object columns, empty untyped tables.
    steps = llm_steps()
    for col in ("parse_failures", "fallback", "tool_calls", "tool_calls_valid"):
        steps[col] = pd.Series([None] * 4, dtype=object)
    orders = pd.DataFrame({"confidence": [None, None], "outcome": [1.0, None]}, dtype=object)
    empty_positions = pd.DataFrame(columns=["date", "symbol", "weight"])
    p = compute_panel(steps, empty_positions, orders, initial_cash=100.0)
    assert (p.parse_failure_rate, p.tool_validity_rate, p.ece, p.brier) == (None,) * 4
    assert p.hhi == 0.0


def test_absent_optional_columns_count_as_null() -> None:
    steps = llm_steps().drop(
        columns=["parse_failures", "fallback", "tool_calls", "tool_calls_valid"]
    )
    orders = llm_orders().drop(columns=["confidence", "outcome"])
    p = compute_panel(steps, positions(), orders, initial_cash=100.0)
    assert (p.parse_failure_rate, p.tool_validity_rate, p.ece, p.brier) == (None,) * 4


def test_no_tool_calls_is_none() -> None:
    steps = llm_steps()
    steps["tool_calls"] = _int([0, 0, 0, 0])
    steps["tool_calls_valid"] = _int([0, 0, 0, 0])
    p = compute_panel(steps, positions(), llm_orders(), initial_cash=100.0)
    assert p.tool_validity_rate is None
    assert p.parse_failure_rate == 0.25


def _empty_frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    steps = llm_steps().iloc[:0]
    return steps, positions().iloc[:0], llm_orders().iloc[:0]


def test_empty_run_is_all_none() -> None:
    p = compute_panel(*_empty_frames(), initial_cash=100.0, benchmark_start=10.0)
    assert all(getattr(p, k) is None for k in KEYS)
    assert p.benchmark == BenchmarkPanel(total_return=None, sharpe=None, max_drawdown=None)


def test_empty_tables_without_columns() -> None:
    steps = llm_steps().iloc[:0]
    p = compute_panel(steps, pd.DataFrame(), pd.DataFrame(), initial_cash=100.0)
    assert p.hhi is None and p.ece is None


def test_one_step() -> None:
    steps = llm_steps().iloc[:1]
    p = compute_panel(steps, positions().iloc[:2], llm_orders().iloc[:2], initial_cash=100.0)
    assert p.total_return == pytest.approx(0.1)
    assert p.max_drawdown == 0.0
    assert p.sharpe is None
    assert p.information_ratio is None
    assert p.hhi == pytest.approx(0.125)
    assert p.cash_ratio == pytest.approx(0.5)
    assert p.abstention_rate == 0.0
    # Without a start level the benchmark has no period at all.
    assert p.benchmark == BenchmarkPanel(total_return=None, sharpe=None, max_drawdown=None)
    with_start = compute_panel(
        steps,
        positions().iloc[:2],
        llm_orders().iloc[:2],
        initial_cash=100.0,
        benchmark_start=10.0,
    )
    assert with_start.benchmark.total_return == pytest.approx(0.01)
    assert with_start.benchmark.sharpe is None
    assert with_start.benchmark.max_drawdown == 0.0


def test_constant_nav_sharpe_is_none() -> None:
    steps = llm_steps()
    steps["nav"] = 100.0
    steps["cash"] = 100.0
    p = compute_panel(steps, positions().iloc[:0], llm_orders(), initial_cash=100.0)
    assert p.sharpe is None
    assert p.total_return == 0.0
    assert p.max_drawdown == 0.0
    assert p.cash_ratio == 1.0
    assert p.hhi == 0.0


def test_missing_benchmark_close_gives_none() -> None:
    steps = llm_steps()
    steps["benchmark_close"] = np.nan
    p = compute_panel(steps, positions(), llm_orders(), initial_cash=100.0)
    assert p.information_ratio is None
    assert p.benchmark == BenchmarkPanel(total_return=None, sharpe=None, max_drawdown=None)
    assert p.sharpe == pytest.approx(SHARPE)


def test_missing_required_column_raises() -> None:
    with pytest.raises(DataError, match="turnover"):
        compute_panel(
            llm_steps().drop(columns="turnover"), positions(), llm_orders(), initial_cash=1.0
        )
    with pytest.raises(DataError, match="weight"):
        compute_panel(
            llm_steps(), positions().drop(columns="weight"), llm_orders(), initial_cash=1.0
        )


def test_unordered_or_duplicate_dates_raise() -> None:
    with pytest.raises(DataError, match="increasing"):
        compute_panel(llm_steps().iloc[::-1], positions(), llm_orders(), initial_cash=100.0)
    dup = llm_steps()
    dup["date"] = DATES[[0, 1, 1, 2]]
    with pytest.raises(DataError, match="unique"):
        compute_panel(dup, positions(), llm_orders(), initial_cash=100.0)


def test_missing_nav_raises() -> None:
    steps = llm_steps()
    steps.loc[2, "nav"] = np.nan
    with pytest.raises(DataError, match=r"nav .*2024-01-04"):
        compute_panel(steps, positions(), llm_orders(), initial_cash=100.0)


def test_bad_arguments_raise() -> None:
    with pytest.raises(DataError, match="initial"):
        compute_panel(llm_steps(), positions(), llm_orders(), initial_cash=0.0)
    with pytest.raises(DataError, match="initial"):
        compute_panel(
            llm_steps(), positions(), llm_orders(), initial_cash=100.0, benchmark_start=-1.0
        )
    with pytest.raises(ConfigError):
        compute_panel(
            llm_steps(), positions(), llm_orders(), initial_cash=100.0, periods_per_year=0
        )


def test_periods_per_year_scales() -> None:
    p = compute_panel(
        llm_steps(), positions(), llm_orders(), initial_cash=100.0, periods_per_year=52
    )
    assert p.sharpe == pytest.approx(SHARPE * math.sqrt(52 / 252))
    assert p.annualized_turnover == pytest.approx(0.625 * 52)


def test_inputs_not_mutated() -> None:
    steps, pos, orders = llm_steps(), positions(), llm_orders()
    compute_panel(steps, pos, orders, initial_cash=100.0, benchmark_start=10.0)
    pd.testing.assert_frame_equal(steps, llm_steps())
    pd.testing.assert_frame_equal(pos, positions())
    pd.testing.assert_frame_equal(orders, llm_orders())


def test_json_keys_and_nulls() -> None:
    p = compute_panel(baseline_steps(), positions(), baseline_orders(), initial_cash=100.0)
    text = p.to_json()
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert list(data) == ["schema_version", *KEYS, "benchmark", *FAULT_COLUMNS]
    assert data["schema_version"] == SCHEMA_VERSION == 3
    assert data["ece"] is None and data["parse_failure_rate"] is None
    assert all(data[k] is None for k in FAULT_COLUMNS)  # a baseline has no endpoint
    assert list(data["benchmark"]) == ["total_return", "sharpe", "max_drawdown"]
    assert MetricPanel.model_validate_json(text) == p


def test_nan_and_inf_become_none() -> None:
    values = dict.fromkeys(KEYS, 0.5) | {"sharpe": float("nan"), "ece": float("inf")}
    bench = BenchmarkPanel(total_return=np.float64("nan"), sharpe=1.0, max_drawdown=0.0)
    p = MetricPanel(**values, benchmark=bench)
    assert p.sharpe is None and p.ece is None and p.benchmark.total_return is None
    assert json.loads(p.to_json())["sharpe"] is None


def test_panel_is_frozen_strict_and_documented() -> None:
    p = compute_panel(llm_steps(), positions(), llm_orders(), initial_cash=100.0)
    with pytest.raises(ValueError):
        p.sharpe = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        MetricPanel.model_validate({**p.model_dump(), "sortino": 1.0})
    for model in (MetricPanel, BenchmarkPanel):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no docstring"


def test_endpoint_faults_are_episode_totals() -> None:
    steps = llm_steps().assign(
        faults_429=_int([0, 1, 0, 2]),
        faults_5xx=_int([1, 0, 0, 0]),
        faults_timeout=_int([0, 0, 0, 0]),
        faults_connection=_int([0, 0, 1, 0]),
        faults_other=_int([0, 0, 0, 0]),
        http_retries=_int([1, 1, 1, 2]),
        retry_wait_s=[0.5, 0.25, 0.0, 1.5],
        failed_attempt_s=[0.01, 0.02, 0.5, 0.0],
    )
    p = compute_panel(steps, positions(), llm_orders(), initial_cash=100.0)
    assert (p.faults_429, p.faults_5xx, p.faults_timeout, p.faults_connection) == (3, 1, 0, 1)
    assert p.faults_other == 0 and p.http_retries == 5
    assert p.retry_wait_s == pytest.approx(2.25) and p.failed_attempt_s == pytest.approx(0.53)
    data = json.loads(p.to_json())
    assert data["faults_429"] == 3 and isinstance(data["http_retries"], int)
    assert MetricPanel.model_validate_json(p.to_json()) == p


def test_steps_recorded_before_faults_give_null_totals() -> None:
    p = compute_panel(llm_steps(), positions(), llm_orders(), initial_cash=100.0)
    assert all(getattr(p, k) is None for k in FAULT_COLUMNS)  # not zero: not recorded


@pytest.mark.parametrize("version", [1, 2])
def test_older_panels_still_read(version: int) -> None:
    """metrics.json of versions 1 and 2 (no fault totals; v1 without the v2 fields)."""
    p = compute_panel(llm_steps(), positions(), llm_orders(), initial_cash=100.0)
    old = {k: v for k, v in p.model_dump().items() if k not in FAULT_COLUMNS}
    if version == 1:
        old = {k: v for k, v in old.items() if k not in ("fallback_steps", "malformed_reply_rate")}
    read = MetricPanel.model_validate({**old, "schema_version": version})
    assert read.schema_version == version and read.http_retries is None
    assert read.total_return == p.total_return
