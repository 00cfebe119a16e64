"""Lenient reading of tool-call JSON and of calls written as text."""

from __future__ import annotations

import pytest

from tradebench.llm.loopback import example_args
from tradebench.llm.parsing import ArgumentsError, call_errors, parse_arguments, recover_calls
from tradebench.llm.types import ChatResponse, Message, ToolCall, Usage


def test_parse_arguments_is_lenient_but_wants_an_object():
    assert parse_arguments("") == {}
    assert parse_arguments('  {"a": "x\ny"} ') == {"a": "x\ny"}
    for bad in ('{"a": 1', "[1, 2]", "nope"):
        with pytest.raises(ArgumentsError):
            parse_arguments(bad)


def test_recovery_ignores_unknown_tools_and_prose():
    assert recover_calls("I think we should buy.", {"submit"}) == []
    assert recover_calls('{"name": "other", "arguments": {}}', {"submit"}) == []
    calls = recover_calls(
        'First {"name": "a", "arguments": {"x": 1}} then {"function": {"name": "b", '
        '"arguments": "{\\"y\\": 2}"}}',
        {"a", "b"},
    )
    assert [(c.name, c.arguments) for c in calls] == [("a", {"x": 1}), ("b", {"y": 2})]
    assert len({c.id for c in calls}) == 2 and all(c.recovered for c in calls)
    again = recover_calls('First {"name": "a", "arguments": {"x": 1}}', {"a"})
    assert again[0].id == recover_calls('First {"name": "a", "arguments": {"x": 1}}', {"a"})[0].id


def _reply(calls: list[ToolCall], finish: str) -> ChatResponse:
    return ChatResponse(
        message=Message(role="assistant", tool_calls=calls),
        usage=Usage(),
        finish_reason=finish,
        latency_s=0.0,
    )


def test_call_errors_flag_malformed_and_truncated_calls():
    good = ToolCall(id="1", name="t", arguments={"a": 1}, raw_arguments='{"a": 1}')
    bad = ToolCall(id="2", name="t", arguments={}, raw_arguments='{"a": ')
    assert call_errors(_reply([good], "tool_calls")) == {}
    assert set(call_errors(_reply([good, bad], "tool_calls"))) == {"2"}
    # the last call of a reply cut at max_tokens is suspect even if it parses
    assert set(call_errors(_reply([good, good.model_copy(update={"id": "3"})], "length"))) == {"3"}


def test_example_args_fit_the_schema():
    schema = {
        "type": "object",
        "properties": {
            "side": {"enum": ["BUY", "SELL"]},
            "n": {"type": "integer", "minimum": 3},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "note": {"type": "string"},
        },
        "required": ["side", "n", "tags"],
    }
    assert example_args(schema) == {"side": "BUY", "n": 3, "tags": ["x", "x"]}
