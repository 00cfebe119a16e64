"""Fixtures for the model layer: a real loopback server speaking both wire formats."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tradebench.llm.base import ChatModel, get_model
from tradebench.llm.loopback import LoopbackServer
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig, ToolSpec

ModelFactory = Callable[..., ChatModel]


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A started loopback server with an empty script; stopped after the test."""
    with LoopbackServer() as server:
        yield server


@pytest.fixture
def fast_retry() -> RetryPolicy:
    """Retries with tiny backoffs and a short timeout, so fault tests stay fast."""
    return RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=2.0, jitter=0.0, timeout_s=5)


@pytest.fixture
def make_model(loopback: LoopbackServer, fast_retry: RetryPolicy) -> ModelFactory:
    """Factory: `make_model(provider, **config_fields, cache=, budget=, limits=, retry=)`."""

    def build(provider: str = "openai", **kwargs: Any) -> ChatModel:
        retry = kwargs.pop("retry", fast_retry)
        layers = {k: kwargs.pop(k) for k in ("cache", "budget", "limits") if k in kwargs}
        url = loopback.openai_url if provider == "openai" else loopback.anthropic_url
        kwargs.setdefault("base_url", url)
        config = ModelConfig(provider=provider, model="test-model", **kwargs)
        return get_model(config, retry=retry, **layers)

    return build


@pytest.fixture
def price_tool() -> ToolSpec:
    """A bounded read-only tool schema."""
    return ToolSpec(
        name="get_price",
        description="Last close of a stock.",
        parameters={
            "type": "object",
            "properties": {"symbol": {"type": "string", "maxLength": 12}},
            "required": ["symbol"],
            "additionalProperties": False,
        },
    )
