"""Reliability metrics of an LLM agent: failed action emissions, malformed replies,
tool-call validity, and the endpoint's transient faults with the retries they cost.

Their step columns are filled by LLM agents only; baselines leave them null. A metric
whose columns are all null is undefined for that run and gives NaN (`None` in the panel),
never 0, so "no failures" and "not applicable" stay distinct.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from tradebench.errors import DataError
from tradebench.metrics._arrays import as_floats, same_length

__all__ = [
    "FAULT_COLUMNS",
    "FAULT_COUNT_COLUMNS",
    "fallback_steps",
    "malformed_reply_rate",
    "parse_failure_rate",
    "step_total",
    "tool_validity_rate",
]

_ENDPOINT_COUNTS = (
    "faults_429",
    "faults_5xx",
    "faults_timeout",
    "faults_connection",
    "faults_other",
    "http_retries",
)
FAULT_COUNT_COLUMNS = (*_ENDPOINT_COUNTS, "tool_choice_fallbacks")
"""Per-step endpoint counts: transient faults by kind (HTTP 429; retryable 5xx; timeouts;
dropped connections; other retryable statuses, 408/409/425), the HTTP retries they
caused, and the steps down the forced-call ladder (a `tool_choice` form the endpoint
rejected or ignored), summed over the step's model calls."""
FAULT_COLUMNS = (*_ENDPOINT_COUNTS, "retry_wait_s", "failed_attempt_s", "tool_choice_fallbacks")
"""The endpoint-fault step columns: the fault and retry counts, the backoff slept and the
wall time lost in failed attempts (seconds), then the forced-call ladder's steps (the
column added last). The panel's per-episode totals carry the same names."""


def parse_failure_rate(fallback: ArrayLike) -> float:
    """Share of decision steps whose action emission still failed validation after the
    retries, so the step fell back to no trade.

    ::

        parse_failure_rate = #{t : fallback_t} / #{t : fallback_t not null}

    Always in [0, 1]: a step counts once however many replies it took (malformed replies
    are `malformed_reply_rate`).

    Args:
        fallback: Per-step flag (1/True when every submission attempt was rejected or
            unreadable); null on steps without a model decision.

    Returns:
        The rate; NaN when every value is null (a baseline) or there are no steps.

    Raises:
        DataError: A flag is not 0 or 1.
    """
    x = as_floats(fallback, "fallback")
    decided = ~np.isnan(x)
    if not decided.any():
        return float("nan")
    if not np.isin(x[decided], (0.0, 1.0)).all():
        raise DataError("fallback holds values other than 0/1; the step records are corrupt")
    return float(x[decided].mean())


def fallback_steps(fallback: ArrayLike) -> float:
    """Number of decision steps that fell back to no trade (NaN for a baseline)."""
    x = as_floats(fallback, "fallback")
    decided = ~np.isnan(x)
    return float(x[decided].sum()) if decided.any() else float("nan")


def malformed_reply_rate(parse_failures: ArrayLike) -> float:
    """Unreadable model replies per decision step, a diagnostic of format discipline.

    ::

        malformed_reply_rate = sum_t parse_failures_t / #{t : parse_failures_t not null}

    Replies that could not be read at all (garbage, empty, truncated or malformed tool
    JSON), retries included, so it can exceed 1.

    Returns:
        The rate; NaN when every value is null (a baseline) or there are no steps.

    Raises:
        DataError: A count is negative.
    """
    x = as_floats(parse_failures, "parse_failures")
    decided = ~np.isnan(x)
    if not decided.any():
        return float("nan")
    if (x[decided] < 0).any():
        raise DataError("parse_failures has negative counts; the step records are corrupt")
    return float(x[decided].sum() / decided.sum())


def tool_validity_rate(tool_calls: ArrayLike, tool_calls_valid: ArrayLike) -> float:
    """Share of the run's tool calls that were valid.

    ::

        tool_validity_rate = sum_t tool_calls_valid_t / sum_t tool_calls_t

    over steps where both counts are present. A call is valid when it names a known tool
    and its arguments pass the tool's schema.

    Args:
        tool_calls: Per-step number of tool calls the model made (null for baselines).
        tool_calls_valid: Per-step number of those calls that were valid.

    Returns:
        The rate in [0, 1]; NaN when there were no tool calls at all (all null, or a
        total of 0).

    Raises:
        DataError: Lengths differ, one count is null where the other is not, a count is
            negative, or valid calls exceed calls on some step.
    """
    calls = as_floats(tool_calls, "tool_calls")
    valid = as_floats(tool_calls_valid, "tool_calls_valid")
    same_length(calls, valid, "tool_calls and tool_calls_valid")
    present = ~np.isnan(calls)
    if (present != ~np.isnan(valid)).any():
        raise DataError(
            "tool_calls and tool_calls_valid must be null on the same steps; "
            "the step records are inconsistent"
        )
    calls, valid = calls[present], valid[present]
    if (calls < 0).any() or (valid < 0).any() or (valid > calls).any():
        raise DataError(
            "tool call counts must satisfy 0 <= tool_calls_valid <= tool_calls on every step"
        )
    total = calls.sum()
    if total == 0:
        return float("nan")
    return float(valid.sum() / total)


def step_total(values: ArrayLike, name: str = "values") -> float:
    """Total of a per-step count or duration over the steps that recorded it.

    ::

        step_total = sum_t x_t over {t : x_t not null}

    Used for the endpoint-fault totals (`FAULT_COLUMNS`): faults by kind, HTTP retries and
    seconds of backoff. Replies served from the cache count 0.

    Returns:
        The total; NaN when every value is null (a baseline, or a step table written
        before the column existed) or there are no steps.

    Raises:
        DataError: A value is negative.
    """
    x = as_floats(values, name)
    present = ~np.isnan(x)
    if not present.any():
        return float("nan")
    if (x[present] < 0).any():
        raise DataError(f"{name} has negative values; the step records are corrupt")
    return float(x[present].sum())
