"""The LLM mandate compiler against the real loopback server (OpenAI and Anthropic wire
formats): a valid forced call, an invalid one retried with feedback, all attempts invalid,
replay from the cache, and the bounds of the tool schema."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tradebench.errors import ConfigError, MandateError
from tradebench.llm.base import ChatModel, get_model
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, Reply
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig
from tradebench.risk import (
    CompiledMandate,
    MandateCompileFailed,
    RiskConstraints,
    compile_mandate,
    compile_mandate_llm,
    constraints_hash,
    render_constraints,
)
from tradebench.risk.compile_llm import TOOL_NAME, ToolLimits, mandate_digest, mandate_tool

MANDATE = (
    "Long only. No more than 10% in any single name. At most 30% per sector. "
    "Keep at least 5% in cash. Exclude TSLA, COIN."
)
GOOD = {
    "long_only": True,
    "max_weight": 0.1,
    "max_sector_weight": 0.3,
    "cash_floor": 0.05,
    "excluded": ["TSLA", "COIN"],
}
FAST = RetryPolicy(max_attempts=2, base_delay_s=0.01, jitter=0.0, timeout_s=5)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def _model(server: LoopbackServer, provider: str = "openai", **layers: Any) -> ChatModel:
    url = server.openai_url if provider == "openai" else server.anthropic_url
    config = ModelConfig(
        provider=provider,
        model="test-model",
        base_url=url,
        max_tokens=1024,
        tool_protocol="native",
    )
    return get_model(config, retry=FAST, **layers)


def _compile(model: ChatModel, text: str = MANDATE, **kwargs: Any) -> CompiledMandate:
    return asyncio.run(compile_mandate_llm(model, text, **kwargs))


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for message in body["messages"]:
        if message.get("role") == "tool":
            out.append(json.loads(message["content"]))
        elif isinstance(message.get("content"), list):
            out += [
                json.loads(b["content"])
                for b in message["content"]
                if b.get("type") == "tool_result"
            ]
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_valid_forced_call_is_validated_stored_and_rendered(
    server: LoopbackServer, provider: str
) -> None:
    server.push(Reply.tool(TOOL_NAME, GOOD))
    record = _compile(_model(server, provider))
    assert record.constraints == compile_mandate(MANDATE)
    assert record.compiler == "llm" and record.model == f"{provider}:test-model"
    assert record.mandate == MANDATE
    assert record.rendered == render_constraints(record.constraints)
    assert record.constraints_hash == constraints_hash(record.constraints)
    assert record.sha256 == mandate_digest(MANDATE, record.constraints)
    assert record.call is not None and record.call.submission_attempts == 1
    assert record.call.tool_calls[0].arguments == GOOD
    (request,) = server.requests
    assert request.forced_tool() == TOOL_NAME
    assert request.tool_schemas()[TOOL_NAME] == mandate_tool(1024).spec.parameters
    assert MANDATE in json.dumps(request.body)
    stored = record.model_dump_json()
    assert CompiledMandate.model_validate_json(stored).model_dump_json() == stored


def test_an_invalid_call_gets_the_errors_and_a_retry(server: LoopbackServer) -> None:
    contradictory = {**GOOD, "min_names": 10, "max_names": 5}
    server.push(Reply.tool(TOOL_NAME, contradictory), Reply.tool(TOOL_NAME, GOOD))
    record = _compile(_model(server))
    assert record.constraints == RiskConstraints(**GOOD)
    assert record.call is not None and record.call.retries == 1
    assert [c.valid for c in record.call.tool_calls] == [False, True]
    feedback = _tool_results(server.requests[1].body)[0]["error"]
    assert feedback["type"] == "rejected" and feedback["attempts_left"] == 2
    assert "min_names 10 > max_names 5" in json.dumps(feedback["issues"])


def test_a_schema_violation_is_fed_back_too(server: LoopbackServer) -> None:
    server.push(
        Reply.tool(TOOL_NAME, {"max_weight": 2.0, "favourite_colour": "red"}),
        Reply.say("I think the constraints are fine."),
        Reply.tool(TOOL_NAME, GOOD),
    )
    record = _compile(_model(server))
    assert record.call is not None and record.call.submission_attempts == 3
    issues = json.dumps(_tool_results(server.requests[1].body)[0]["error"]["issues"])
    assert "max_weight" in issues and "does not allow" in issues
    assert "favourite_colour" not in issues  # named by the rule, not quoted back


def test_no_valid_attempt_is_a_clear_error_with_the_record(server: LoopbackServer) -> None:
    bad = {"max_weight": 0.1, "excluded": ["TSLA."]}
    server.push(*[Reply.tool(TOOL_NAME, bad)] * 3)
    with pytest.raises(MandateCompileFailed) as info:
        _compile(_model(server), max_retries=2)
    message = str(info.value)
    assert "openai:test-model gave no valid risk constraints in 3 attempt(s)" in message
    assert "TSLA." in message and "compile_mandate" in message
    assert isinstance(info.value, MandateError)
    assert info.value.call.fallback and info.value.call.submission_attempts == 3
    assert server.count() == 3


def test_a_mandate_is_checked_before_any_request(server: LoopbackServer) -> None:
    with pytest.raises(MandateError, match="empty"):
        _compile(_model(server), "   ")
    with pytest.raises(MandateError, match="at most 4000"):
        _compile(_model(server), "Long only. " * 500)
    assert server.count() == 0


def test_a_recorded_compilation_replays_without_the_server(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with LoopbackServer([Reply.tool(TOOL_NAME, GOOD)]) as srv:
        recorded = _compile(_model(srv, cache=ResponseCache(path)))
    with LoopbackServer() as gone:
        replayed = _compile(_model(gone, cache=ResponseCache(path, mode="replay")))
        assert gone.count() == 0
    assert replayed.model_dump_json() == recorded.model_dump_json()


# ---------------------------------------------------------------- the tool's bounds


@pytest.mark.parametrize("max_tokens", [400, 512, 1024, 2048, 4096, 16384])
def test_the_tool_schema_fits_max_tokens(max_tokens: int) -> None:
    limits = ToolLimits.for_tokens(max_tokens)
    assert limits.worst_case_tokens() <= max_tokens
    schema = mandate_tool(max_tokens).spec.parameters
    assert schema["properties"]["sector_caps"]["maxItems"] == limits.max_sectors
    assert schema["properties"]["excluded"]["maxItems"] == limits.max_excluded
    if max_tokens >= 1024:
        assert limits.max_sectors >= 4 and limits.max_excluded >= 16


def test_too_few_tokens_for_the_tool_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="too small for the mandate tool"):
        ToolLimits.for_tokens(200)


def test_llama_cpp_turns_the_tool_schema_into_a_bounded_grammar() -> None:
    """No rule of the grammar llama.cpp's server would build repeats without end."""
    grammar_mod = pytest.importorskip(
        "llama_cpp.llama_grammar", reason="llama_cpp is not importable: pip install '.[local-llm]'"
    )
    gbnf = grammar_mod.LlamaGrammar.from_json_schema(
        json.dumps(mandate_tool(1024).spec.parameters), verbose=False
    )._grammar
    assert "sector-caps-item" in gbnf and "excluded-item" in gbnf
    outside = re.sub(r'\[[^\]]*\]|"(?:[^"\\]|\\.)*"', "", gbnf)  # drop classes and literals
    assert "*" not in outside and "+" not in outside, gbnf
