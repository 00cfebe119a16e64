"""Parse-failure and tool-validity rates: hand-computed values and null semantics."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tradebench.errors import DataError
from tradebench.metrics import parse_failure_rate, tool_validity_rate


def test_parse_failure_rate_hand() -> None:
    # 0 + 2 + 1 + 0 = 3 failures over 4 decision steps.
    assert parse_failure_rate([0, 2, 1, 0]) == 0.75
    assert parse_failure_rate([0, 0, 0]) == 0.0


def test_parse_failure_rate_counts_only_decision_steps() -> None:
    # The null step had no decision: 2 failures over 2 decision steps.
    counts = pd.Series([1, None, 1], dtype="Int64")
    assert parse_failure_rate(counts) == 1.0


def test_parse_failure_rate_baseline_is_nan() -> None:
    assert math.isnan(parse_failure_rate(pd.Series([None, None], dtype="Int64")))
    assert math.isnan(parse_failure_rate([float("nan")] * 3))
    assert math.isnan(parse_failure_rate([]))


def test_parse_failure_rate_negative_raises() -> None:
    with pytest.raises(DataError):
        parse_failure_rate([1, -1])


def test_tool_validity_rate_hand() -> None:
    # (2 + 0 + 2 + 0) valid of (3 + 0 + 2 + 1) calls = 4 / 6.
    assert tool_validity_rate([3, 0, 2, 1], [2, 0, 2, 0]) == pytest.approx(4 / 6)
    assert tool_validity_rate([1, 1], [1, 1]) == 1.0


def test_tool_validity_rate_no_calls_is_nan() -> None:
    assert math.isnan(tool_validity_rate([0, 0, 0], [0, 0, 0]))
    nulls = pd.Series([None, None], dtype="Int64")
    assert math.isnan(tool_validity_rate(nulls, nulls))
    assert math.isnan(tool_validity_rate([], []))


def test_tool_validity_rate_skips_null_steps() -> None:
    calls = pd.Series([2, None, 2], dtype="Int64")
    valid = pd.Series([1, None, 2], dtype="Int64")
    assert tool_validity_rate(calls, valid) == 0.75


@pytest.mark.parametrize(
    ("calls", "valid"),
    [([1, 2], [2, 2]), ([1, -1], [0, -1]), ([1, None], [1, 0]), ([1], [1, 1])],
)
def test_tool_validity_rate_inconsistent_raises(calls: list, valid: list) -> None:
    with pytest.raises(DataError):
        tool_validity_rate(calls, valid)
