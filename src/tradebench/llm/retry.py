"""Retries for transient endpoint faults: exponential backoff, jitter, Retry-After.

Adapters translate SDK exceptions into `TransientFault` (worth another attempt: 429, 5xx,
timeouts, dropped connections) or `ProviderError` (not worth it: 400, 401, 404, ...).
`call_with_retries` runs the attempts, logs each one, counts them in the adapter's live
`FaultStats` and returns, with the result, the request's own `CallFaults` (retries, faults
by kind, backoff slept, time lost in failed attempts), which the reply carries into the
run records.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tradebench.errors import ProviderError
from tradebench.llm.redact import llm_logger
from tradebench.llm.types import CallFaults

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class RetryPolicy(BaseModel):
    """How hard to try one request."""

    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=6, ge=1)
    """Attempts in total (first try included)."""
    base_delay_s: float = 0.5
    """Backoff before the 2nd attempt; doubles each time."""
    max_delay_s: float = 30.0
    """Cap on one backoff (and on an honoured Retry-After)."""
    jitter: float = 0.25
    """Random extra delay, as a fraction of the backoff (0 = none)."""
    timeout_s: float = 120.0
    """Per-attempt HTTP timeout."""

    def backoff(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay_s)
        delay = min(self.base_delay_s * 2 ** (attempt - 1), self.max_delay_s)
        return delay * (1.0 + self.jitter * rng.random())


class TransientFault(Exception):
    """A failed attempt worth retrying; `kind` names it for the counts."""

    def __init__(self, kind: str, detail: str, retry_after: float | None = None) -> None:
        """Record the fault `kind` (`http_429`, `http_5xx`, `timeout`, `connection`)."""
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.retry_after = retry_after


class FaultStats(BaseModel):
    """Counts of attempts and faults for one adapter, over its life (live; the run records
    get each request's own `CallFaults` through its reply)."""

    requests: int = 0
    """Logical requests sent (each may take several attempts)."""
    attempts: int = 0
    """HTTP attempts made."""
    retries: int = 0
    """Attempts after the first."""
    faults: dict[str, int] = Field(default_factory=dict)
    """Transient faults by kind: `http_429`, `http_5xx`, `timeout`, `connection`."""
    failures: int = 0
    """Requests that failed for good (non-retryable error or attempts exhausted)."""
    parse_failures: int = 0
    """Replies that arrived but could not be fully read (garbage, empty, bad tool JSON)."""


def status_kind(status: int) -> str:
    """Fault kind for a retryable HTTP status."""
    return "http_429" if status == 429 else "http_5xx" if status >= 500 else f"http_{status}"


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return float(lowered["retry-after-ms"]) / 1000.0
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
        return None if parsed is None else max(parsed.timestamp() - time.time(), 0.0)


class AttemptsExhausted(ProviderError):
    """Every attempt of a request failed with a transient fault; `faults` counts them by
    kind (`connection` alone: the endpoint dropped or refused every connection)."""

    def __init__(self, message: str, faults: Mapping[str, int]) -> None:
        """The error line and the faults of the attempts by kind."""
        super().__init__(message)
        self.faults = dict(faults)

    @property
    def only_connections(self) -> bool:
        """Whether every attempt lost its connection (no HTTP status, no timeout)."""
        return set(self.faults) == {"connection"}


def _give_up(
    label: str, attempt: int, fault: TransientFault, stats: FaultStats, faults: Mapping[str, int]
) -> AttemptsExhausted:
    """Count and log a request that failed for good; the error to raise."""
    stats.failures += 1
    llm_logger().warning("%s attempt %d failed for good: %s", label, attempt, fault)
    return AttemptsExhausted(
        f"{label}: gave up after {attempt} attempts; last fault {fault}. "
        "Check that the endpoint is up and reachable; a run spec's agent entry can allow "
        "more attempts (max_attempts) and a longer wait per attempt (timeout_s).",
        faults,
    )


async def call_with_retries(
    attempt_fn: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    stats: FaultStats,
    label: str,
    rng: random.Random | None = None,
) -> tuple[T, CallFaults]:
    """Run `attempt_fn` until it succeeds, retrying `TransientFault`s with backoff.

    Every attempt is logged on `tradebench.llm` (successes at DEBUG, faults at WARNING)
    and counted in `stats`.

    Returns:
        The result and this request's `CallFaults`: retries (attempts after the first),
        the faults by kind, the backoff slept (as scheduled) and the wall time of the
        failed attempts.

    Raises:
        AttemptsExhausted: Every attempt met a transient fault (the last one is named).
        ProviderError: A fatal error.
    """
    log = llm_logger()
    rng = rng or random.Random()
    stats.requests += 1
    kinds: dict[str, int] = {}
    met: dict[str, int] = {}
    waited = lost = 0.0
    for attempt in range(1, policy.max_attempts + 1):
        stats.attempts += 1
        if attempt > 1:
            stats.retries += 1
        start = time.perf_counter()
        try:
            result = await attempt_fn()
        except TransientFault as fault:
            lost += time.perf_counter() - start
            stats.faults[fault.kind] = stats.faults.get(fault.kind, 0) + 1
            field = CallFaults.field_for(fault.kind)
            kinds[field] = kinds.get(field, 0) + 1
            met[fault.kind] = met.get(fault.kind, 0) + 1
            if attempt == policy.max_attempts:
                raise _give_up(label, attempt, fault, stats, met) from None
            delay = policy.backoff(attempt, fault.retry_after, rng)
            log.warning("%s attempt %d failed: %s; retrying in %.2fs", label, attempt, fault, delay)
            waited += delay
            await asyncio.sleep(delay)
        except ProviderError as exc:
            if getattr(exc, "caller_recovers", False):  # e.g. a tool_choice form refused
                log.info("%s attempt %d refused: %s", label, attempt, exc)
                raise
            stats.failures += 1
            log.error("%s attempt %d failed (not retryable): %s", label, attempt, exc)
            raise
        else:
            log.debug("%s attempt %d succeeded", label, attempt)
            faults = CallFaults(
                retries=attempt - 1,
                retry_wait_s=waited,
                failed_attempt_s=lost,
                **kinds,
            )
            return result, faults
    raise AssertionError("unreachable")  # pragma: no cover
