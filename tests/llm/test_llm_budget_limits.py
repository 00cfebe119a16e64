"""Token and cost caps stop a run before the call that could cross them; endpoint limits."""

from __future__ import annotations

import asyncio
import time

import pytest

from tradebench.errors import BudgetExceeded, ConfigError
from tradebench.llm.budget import Budget, BudgetConfig, BudgetState, Price
from tradebench.llm.cache import ResponseCache
from tradebench.llm.limits import Limits, RateLimiter
from tradebench.llm.types import Message, ModelConfig, Usage

ASK = [Message(role="user", content="x" * 400)]  # ~100 estimated input tokens


def _spend_until_stopped(model, limit: int = 50) -> tuple[int, str]:
    calls = 0
    with pytest.raises(BudgetExceeded) as info:
        for i in range(limit):
            asyncio.run(model.generate(ASK, sample_index=i))
            calls += 1
    return calls, str(info.value)


def test_token_cap_stops_before_crossing(loopback, make_model):
    budget = Budget(BudgetConfig(max_tokens=1000))
    model = make_model(max_tokens=100, budget=budget)
    calls, message = _spend_until_stopped(model)
    spent = budget.snapshot()
    assert calls >= 3 and spent.calls == calls == len(loopback.requests)  # refused call not sent
    assert spent.input_tokens + spent.output_tokens <= 1000
    assert "token budget reached" in message and "raise the budget's max_tokens" in message


def test_cost_cap_uses_price_table(loopback, make_model):
    prices = {"openai:test-model": Price(input_per_mtok=1000.0, output_per_mtok=4000.0)}
    budget = Budget(BudgetConfig(max_cost_usd=1.0, prices=prices))
    model = make_model(max_tokens=50, budget=budget)
    calls, message = _spend_until_stopped(model)
    spent = budget.snapshot()
    expected = (spent.input_tokens * 1000.0 + spent.output_tokens * 4000.0) / 1e6
    assert spent.cost_usd == pytest.approx(expected) and spent.cost_usd <= 1.0
    assert calls == len(loopback.requests) and "cost budget reached" in message


def test_cost_cap_without_price_fails_early(make_model):
    with pytest.raises(ConfigError, match="price table has no entry for openai:test-model"):
        make_model(budget=Budget(BudgetConfig(max_cost_usd=1.0)))


def test_cache_hits_are_free(loopback, make_model, tmp_path):
    budget = Budget(BudgetConfig(max_tokens=10_000))
    model = make_model(max_tokens=100, budget=budget, cache=ResponseCache(tmp_path / "c.sqlite"))
    for _ in range(5):
        asyncio.run(model.generate(ASK))
    assert budget.snapshot().calls == 1 and len(loopback.requests) == 1


def test_budget_resumes_from_saved_state():
    saved = BudgetState(calls=3, input_tokens=900, output_tokens=50)
    budget = Budget(BudgetConfig(max_tokens=1000), state=saved)
    model_cfg = ModelConfig(provider="openai", model="m")
    with pytest.raises(BudgetExceeded, match="950 of 1,000"):
        budget.reserve(model_cfg, Usage(input_tokens=40, output_tokens=20))
    held = budget.reserve(model_cfg, Usage(input_tokens=30, output_tokens=10))
    budget.settle(model_cfg, held, Usage(input_tokens=5, output_tokens=5))
    spent = budget.snapshot().model_dump()
    assert spent.pop("prices")["openai:m"]["source"] == "unknown"  # no source prices "m"
    assert spent == {
        "schema_version": 1,
        "calls": 4,
        "input_tokens": 905,
        "output_tokens": 55,
        "cost_usd": 0.0,
        "unpriced_calls": 1,
    }


def test_concurrency_limit_holds_at_the_server(loopback, make_model):
    loopback.latency_s = 0.15
    limiter = RateLimiter(Limits(max_concurrency=2))
    model = make_model(limits=limiter)

    async def burst() -> None:
        await asyncio.gather(*(model.generate(ASK, sample_index=i) for i in range(6)))

    start = time.perf_counter()
    asyncio.run(burst())
    assert loopback.max_in_flight == 2
    assert time.perf_counter() - start >= 3 * 0.15


def test_requests_per_window_are_spaced(loopback, make_model):
    model = make_model(limits=Limits(requests_per_minute=2, window_s=0.4))

    async def four() -> list[float]:
        stamps = []
        for i in range(4):
            await model.generate(ASK, sample_index=i)
            stamps.append(time.perf_counter())
        return stamps

    start = time.perf_counter()
    stamps = asyncio.run(four())
    # at most two requests start in any window: the third and the fourth each start at least
    # a window after the first and the second. Only lower bounds that follow from it: the
    # first starts after `start`, the second after the first returned (`stamps[0]`), and a
    # request returns after it starts (load can only add time).
    assert stamps[2] - start >= 0.4 and stamps[3] - start >= 0.4
    assert stamps[3] - stamps[0] >= 0.4


def test_tokens_per_window_are_spaced(loopback, make_model):
    # each request is charged ~100 input + 100 max_tokens = 200 estimated tokens
    model = make_model(max_tokens=100, limits=Limits(tokens_per_minute=300, window_s=0.4))

    async def three() -> float:
        start = time.perf_counter()
        for i in range(3):
            await model.generate(ASK, sample_index=i)
        return time.perf_counter() - start

    assert asyncio.run(three()) >= 0.4
