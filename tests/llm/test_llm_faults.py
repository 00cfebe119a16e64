"""The fault matrix: retries with backoff on 429/5xx/timeouts/drops; parse failures counted."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time

import pytest

from tradebench.errors import ProviderError
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import Reply
from tradebench.llm.retry import RetryPolicy, parse_retry_after
from tradebench.llm.types import CallFaults, Message

PROVIDERS = ["openai", "anthropic"]
ASK = [Message(role="user", content="go")]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_fault_matrix_is_survived_with_counts(loopback, make_model, price_tool, provider):
    """429 (Retry-After), 500, 503, a dropped connection and a timeout, then success."""
    loopback.push(
        Reply.error(429, retry_after=0.3),
        Reply.error(500),
        Reply.error(503),
        Reply.drop(),
        Reply.slow(Reply.say("too late"), 1.5),
        Reply.tool("get_price", {"symbol": "AAPL"}),
    )
    retry = RetryPolicy(max_attempts=6, base_delay_s=0.01, jitter=0.0, timeout_s=0.5)
    model = make_model(provider, retry=retry)
    start = time.perf_counter()
    reply = asyncio.run(model.generate(ASK, [price_tool], "get_price"))
    elapsed = time.perf_counter() - start
    assert reply.message.tool_calls[0].arguments == {"symbol": "AAPL"}
    stats = model.stats
    assert stats.requests == 1 and stats.attempts == 6 and stats.retries == 5
    assert stats.faults == {"http_429": 1, "http_5xx": 2, "connection": 1, "timeout": 1}
    assert stats.failures == 0 and stats.parse_failures == 0
    assert elapsed >= 0.3 + 0.5  # honoured Retry-After, waited out the timeout
    # the same counts travel with the reply, for the run records
    faults = reply.faults
    assert faults.by_kind() == {"http_429": 1, "http_5xx": 2, "connection": 1, "timeout": 1}
    assert faults.retries == 5 and reply.http_attempts == 6 and not reply.cached
    assert faults.retry_wait_s >= 0.3  # the honoured Retry-After, plus the backoffs
    assert faults.failed_attempt_s >= 0.5  # the attempt that waited out the timeout
    assert len(loopback.requests) == 6
    # every attempt carried the same body
    assert len({str(r.body) for r in loopback.requests}) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_after_429_and_503_carries_its_faults(loopback, make_model, price_tool, provider):
    """429 with Retry-After, then 503, then success: one reply, its faults on it."""
    loopback.push(
        Reply.error(429, retry_after=0.05),
        Reply.error(503),
        Reply.tool("get_price", {"symbol": "AAPL"}),
    )
    retry = RetryPolicy(max_attempts=4, base_delay_s=0.01, jitter=0.0, timeout_s=5)
    reply = asyncio.run(make_model(provider, retry=retry).generate(ASK, [price_tool], "get_price"))
    assert reply.message.tool_calls[0].arguments == {"symbol": "AAPL"}
    assert [r.reply for r in loopback.requests] == ["error", "error", "tool_calls"]
    faults = reply.faults
    assert (faults.retries, faults.http_429, faults.http_5xx) == (2, 1, 1)
    assert (faults.timeout, faults.connection, faults.other) == (0, 0, 0)
    assert reply.http_attempts == 3
    # the honoured Retry-After, then the second backoff (0.01 * 2): as scheduled
    assert faults.retry_wait_s >= 0.05
    assert faults.retry_wait_s == pytest.approx(0.05 + 0.02)
    assert faults.failed_attempt_s > 0


def test_other_retryable_statuses_are_counted_as_other(loopback, make_model):
    loopback.push(Reply.error(408, retry_after=0.01), Reply.error(425), Reply.say("ok"))
    reply = asyncio.run(make_model().generate(ASK))
    assert reply.faults.other == 2 and reply.faults.retries == 2
    assert reply.faults.by_kind() == {"other": 2}


def test_a_clean_reply_has_no_faults(loopback, make_model):
    reply = asyncio.run(make_model().generate(ASK))
    assert reply.faults == CallFaults() and reply.http_attempts == 1


def test_faults_are_not_cached_and_a_hit_carries_none(loopback, make_model, tmp_path):
    """The reply is cached as it came; its faults are not: a hit (and a replay) has none."""
    loopback.push(Reply.error(429, retry_after=0.01), Reply.drop(), Reply.say("the reply"))
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    live = asyncio.run(make_model(cache=cache).generate(ASK))
    hit = asyncio.run(make_model(cache=cache).generate(ASK))
    assert live.faults.by_kind() == {"http_429": 1, "connection": 1}
    assert hit.cached and hit.faults == CallFaults() and hit.http_attempts == 0
    assert hit.model_dump(exclude={"cached", "faults"}) == live.model_dump(
        exclude={"cached", "faults"}
    )
    cache.close()
    (row,) = ResponseCache(path, mode="replay").rows()
    stored = json.loads(row.response)
    assert "faults" not in stored and "cached" not in stored
    assert stored == live.model_dump(mode="json", exclude={"cached", "faults"})
    loopback.stop()
    replayed = asyncio.run(make_model(cache=ResponseCache(path, mode="replay")).generate(ASK))
    assert replayed.faults == CallFaults() and replayed.message == live.message
    assert len(loopback.requests) == 3  # the hit and the replay never reached the server


@pytest.mark.parametrize("provider", PROVIDERS)
def test_attempts_are_bounded(loopback, make_model, provider):
    loopback.push(*[Reply.error(502)] * 10)
    model = make_model(provider)  # fast_retry: 4 attempts
    with pytest.raises(ProviderError, match="gave up after 4 attempts"):
        asyncio.run(model.generate(ASK))
    assert model.stats.attempts == 4 and model.stats.failures == 1
    assert len(loopback.requests) == 4


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(loopback, make_model, provider, status):
    loopback.push(Reply.error(status, body="bad request: model not found"))
    model = make_model(provider)
    with pytest.raises(ProviderError, match=f"HTTP {status}"):
        asyncio.run(model.generate(ASK))
    assert model.stats.attempts == 1 and len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        (Reply.garbage(), "unreadable body"),
        (Reply.garbage('{"choices": []'), "unreadable body"),
        (Reply.empty(), "empty reply"),
        (Reply.truncated("get_price", {"symbol": "AAPL", "note": "long"}), "get_price"),
    ],
)
def test_bad_bodies_are_counted_parse_failures(
    loopback, make_model, price_tool, provider, reply, needle
):
    loopback.push(reply, reply)
    model = make_model(provider)
    first = asyncio.run(model.generate(ASK, [price_tool]))
    second = asyncio.run(model.generate(ASK, [price_tool]))
    for response in (first, second):
        assert response.parse_error is not None and needle in response.parse_error
    assert model.stats.parse_failures == 2
    assert model.stats.attempts == 2 and model.stats.retries == 0  # not retried


def test_truncated_openai_arguments_keep_raw_text(loopback, make_model, price_tool):
    loopback.push(Reply.truncated("get_price", {"symbol": "AAPL"}))
    reply = asyncio.run(make_model().generate(ASK, [price_tool]))
    (call,) = reply.message.tool_calls
    assert call.arguments == {} and call.raw_arguments.startswith('{"symbol"')
    assert reply.finish_reason == "length" and "not valid JSON" in reply.parse_error


def test_retry_after_forms():
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({}) is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after({"Retry-After": future}) <= 31


def test_backoff_is_exponential_with_bounded_jitter():
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=4.0, jitter=0.25)
    rng = random.Random(1337)
    for attempt, base in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (6, 4.0)]:
        delay = policy.backoff(attempt, None, rng)
        assert base <= delay <= base * 1.25
    assert policy.backoff(1, 3.0, rng) == 3.0  # Retry-After wins, without jitter
    assert policy.backoff(1, 99.0, rng) == 4.0  # capped
