"""End to end against a real model server: llama-cpp-python serving a bundled tiny GGUF.

Asserts the plumbing, not the model's wisdom: requests are accepted by a real server (no
HTTP error, one attempt each), every reply is a valid tool call or a counted failure, the
loop ends with a submission or the fallback, and the run replays exactly from the cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from tradebench.agents.tool_loop import LoopConfig, run_tool_loop
from tradebench.agents.tools import SubmitTool, Tool
from tradebench.errors import ConfigError, ToolError
from tradebench.llm.base import get_model
from tradebench.llm.cache import ResponseCache
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.llm.ping import ping_model
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig, ToolSpec

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]
ONE_SHOT = RetryPolicy(max_attempts=1, timeout_s=120)  # any HTTP error fails the test


class Decision(BaseModel):
    side: Literal["BUY", "SELL", "HOLD"]
    reason: str = Field(max_length=40)  # bounded: grammar-forced output fits max_tokens


@pytest.fixture(scope="module")
def local_server() -> Iterator[LocalServer]:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        bundled = find_bundled_model()
    except ConfigError as exc:
        pytest.skip(str(exc))
    with LocalServer(bundled, n_ctx=2048, n_threads=2) as server:
        yield server


def _config(server: LocalServer) -> ModelConfig:
    return ModelConfig(
        provider="openai",
        model=server.alias,
        base_url=server.base_url,
        max_tokens=96,
        temperature=0.0,
    )


def test_ping_gets_a_valid_forced_tool_call(local_server):
    result = asyncio.run(ping_model(_config(local_server), ONE_SHOT))
    assert result.valid, result.error
    assert result.attempts == 1 and result.usage.output_tokens > 0


def test_tool_loop_end_to_end_and_replay(local_server, tmp_path):
    rejected: list[dict[str, Any]] = []

    def first_attempt_rejected(decision: Decision) -> Decision:
        # deterministic constraint failure, to send a retry with feedback to a real server
        if not rejected:
            rejected.append(decision.model_dump())
            raise ToolError("state a different reason than before")
        return decision

    price = Tool(
        spec=ToolSpec(
            name="get_price",
            description="Last close price of a stock symbol.",
            parameters={
                "type": "object",
                "required": ["symbol"],
                "additionalProperties": False,
                "properties": {"symbol": {"type": "string", "maxLength": 6}},
            },
        ),
        fn=lambda args: {"symbol": args["symbol"], "close": 101.5},
    )
    submit = SubmitTool.from_model(
        "submit", "Submit the decision.", Decision, check=first_attempt_rejected
    )
    config = LoopConfig(max_tool_calls=2, max_submit_retries=2)
    path = tmp_path / "cache.sqlite"

    def run(mode: str):
        model = get_model(
            _config(local_server), cache=ResponseCache(path, mode=mode), retry=ONE_SHOT
        )
        coro = run_tool_loop(
            model,
            system="You are a stock trader. Use the tools.",
            user="Check the price of ACME, then decide BUY, SELL or HOLD.",
            tools=[price],
            submit=submit,
            config=config,
        )
        return asyncio.run(coro)

    result = run("readwrite")
    assert result.stop_reason in ("submitted", "fallback")
    assert result.fallback == (result.action is None)
    assert rejected, "the first submission never arrived"
    assert result.submission_attempts >= 2 and result.retries >= 1
    for call in result.model_calls:
        if call.phase == "submit":  # forced: a tool call, or a counted parse failure
            assert call.tool_calls >= 1 or call.parse_error is not None
    assert result.parse_failures == sum(c.parse_error is not None for c in result.model_calls)
    for record in result.tool_calls:
        assert record.valid or record.error_kind is not None
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0

    rejected.clear()
    replayed = run("replay")
    assert replayed.model_dump_json() == result.model_dump_json()
