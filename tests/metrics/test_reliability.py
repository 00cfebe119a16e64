"""Failed emissions, malformed replies and tool validity: hand values and null semantics."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tradebench.errors import DataError
from tradebench.metrics import (
    fallback_steps,
    malformed_reply_rate,
    parse_failure_rate,
    step_total,
    tool_validity_rate,
)


def test_parse_failure_rate_is_the_share_of_steps_that_fell_back() -> None:
    # 1 of 4 decision steps fell back, however many replies it took.
    assert parse_failure_rate([0, 1, 0, 0]) == 0.25
    assert parse_failure_rate([True, True]) == 1.0 and parse_failure_rate([0, 0, 0]) == 0.0
    flags = pd.Series([True, None, False], dtype="boolean")  # the null step had no decision
    assert parse_failure_rate(flags) == 0.5 and fallback_steps(flags) == 1


def test_parse_failure_rate_stays_in_the_unit_interval() -> None:
    with pytest.raises(DataError):
        parse_failure_rate([0, 2, 1])  # a count, not a flag: the old definition


def test_malformed_reply_rate_counts_replies() -> None:
    # 0 + 2 + 1 + 0 = 3 unreadable replies over 4 decision steps.
    assert malformed_reply_rate([0, 2, 1, 0]) == 0.75
    assert malformed_reply_rate(pd.Series([1, None, 1], dtype="Int64")) == 1.0
    with pytest.raises(DataError):
        malformed_reply_rate([1, -1])


def test_reliability_of_a_baseline_is_nan() -> None:
    for metric in (parse_failure_rate, fallback_steps, malformed_reply_rate):
        assert math.isnan(metric(pd.Series([None, None], dtype="Int64")))
        assert math.isnan(metric([float("nan")] * 3))
        assert math.isnan(metric([]))


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


def test_step_total_sums_recorded_steps_and_keeps_null_apart_from_zero() -> None:
    assert step_total([0, 2, 1]) == 3.0 and step_total([0.5, None, 0.25]) == 0.75
    assert step_total(pd.Series([0, 0], dtype="Int64")) == 0.0  # recorded, no fault
    assert math.isnan(step_total(pd.Series([None, None], dtype="Int64")))  # not recorded
    assert math.isnan(step_total([]))
    with pytest.raises(DataError, match="negative"):
        step_total([1, -1], "faults_429")
