"""Tools reach a model whose server drops them: the probe, the text protocol, replay.

The loopback server emulates a chat template that loses the request's `tools` or its
system turn (`drops=`): it leaves them out of the prompt-token count, as such a server
reports it. Assertions read what went over the wire.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from tradebench.llm.base import get_model
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, Reply
from tradebench.llm.openai_provider import OpenAIChatModel, support_from_counts
from tradebench.llm.types import Message, ModelConfig, ToolCall, ToolSpec

PRICE = ToolSpec(
    name="get_price",
    description="Last close of one asset.",
    parameters={
        "type": "object",
        "properties": {"stock_id": {"type": "string", "maxLength": 12}},
        "required": ["stock_id"],
    },
)
SUBMIT = ToolSpec(
    name="submit",
    description="Submit the decision.",
    parameters={
        "type": "object",
        "properties": {"side": {"enum": ["BUY", "SELL", "HOLD"]}},
        "required": ["side"],
    },
)
SYSTEM = "You manage a portfolio of anonymised assets."
CONVERSATION = [
    Message(role="system", content=SYSTEM),
    Message(role="user", content="Research asset_0001, then decide."),
]
CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def _model(server: LoopbackServer, **fields: object) -> OpenAIChatModel:
    config = ModelConfig(
        provider="openai", model="m", base_url=server.openai_url, max_tokens=64, **fields
    )
    model = get_model(config)
    assert isinstance(model, OpenAIChatModel)
    return model


def _ask(model: object, messages: list[Message], tools: list[ToolSpec], choice: str = "auto"):
    return asyncio.run(model.generate(messages, tools, choice))  # type: ignore[attr-defined]


def test_a_server_that_drops_tools_gets_them_in_the_prompt_and_calls_come_back() -> None:
    text_call = (
        '<tool_call>{"name": "get_price", "arguments": {"stock_id": "asset_0001"}}</tool_call>'
    )
    with LoopbackServer([Reply.say(text_call)], drops=["tools"]) as server:
        model = _model(server)
        reply = _ask(model, list(CONVERSATION), [PRICE, SUBMIT])
    assert len(server.probes) == 3 and len(server.requests) == 1
    body = server.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(SYSTEM)
    for tool in (PRICE, SUBMIT):  # every tool, its description and its schema, as text
        assert f"- {tool.name}: {tool.description}" in system["content"]
        assert json.dumps(tool.parameters, separators=(",", ":")) in system["content"]
    [call] = reply.message.tool_calls
    assert (call.name, call.arguments, call.recovered) == (
        "get_price",
        {"stock_id": "asset_0001"},
        True,
    )
    assert model.support is not None and not model.support.tools and model.support.system
    assert model.text_protocol_replies == 1


def test_earlier_calls_and_results_are_shown_back_as_text() -> None:
    call = ToolCall(
        id="c1", name="submit", arguments={"side": "BUY!"}, raw_arguments='{"side": "BUY!"}'
    )
    history = [
        *CONVERSATION,
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", name="submit", content='{"error": "bad side"}'),
    ]
    with LoopbackServer([Reply.say('{"side": "HOLD"}')], drops=["tools"]) as server:
        reply = _ask(_model(server), history, [SUBMIT], "submit")
    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    [shown] = CALL_RE.findall(messages[2]["content"])  # the rejected call, as written
    assert json.loads(shown) == {"name": "submit", "arguments": {"side": "BUY!"}}
    assert "bad side" in messages[3]["content"] and "submit" in messages[3]["content"]
    assert messages[3]["content"].endswith("you must call `submit` and nothing else.")
    # told which tool to call, a small model often writes only its arguments
    [forced] = reply.message.tool_calls
    assert (forced.name, forced.arguments, forced.recovered) == ("submit", {"side": "HOLD"}, True)


def test_a_template_without_a_system_role_gets_it_in_the_first_user_turn() -> None:
    with LoopbackServer([Reply.tool("get_price", {"stock_id": "x"})], drops=["system"]) as server:
        model = _model(server)
        reply = _ask(model, list(CONVERSATION), [PRICE])
    body = server.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"].startswith(SYSTEM)
    assert "Research asset_0001" in body["messages"][0]["content"]
    assert [t["function"]["name"] for t in body["tools"]] == ["get_price"]  # still native
    assert reply.message.tool_calls[0].recovered is False
    assert model.text_protocol_replies == 0


def test_a_server_that_keeps_tools_is_probed_once_and_used_natively() -> None:
    with LoopbackServer() as server:
        model = _model(server)
        for _ in range(3):
            _ask(model, list(CONVERSATION), [PRICE], "get_price")
    assert len(server.probes) == 3 and len(server.requests) == 3
    assert all("tools" in r.body for r in server.requests)
    assert all(r.body["messages"][0]["content"] == SYSTEM for r in server.requests)
    assert model.support is not None and model.support.tools and model.support.system


@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_chosen_protocol_is_not_probed(protocol: str) -> None:
    reply = Reply.say('<tool_call>{"name": "get_price", "arguments": {}}</tool_call>')
    with LoopbackServer([reply]) as server:
        _ask(_model(server, tool_protocol=protocol), list(CONVERSATION), [PRICE])
    assert server.probes == []
    assert ("tools" in server.requests[0].body) == (protocol == "native")


def test_text_protocol_replies_replay_from_the_cache(tmp_path: Path) -> None:
    text_call = '<tool_call>{"name": "get_price", "arguments": {"stock_id": "a"}}</tool_call>'
    path = tmp_path / "cache.sqlite"
    with LoopbackServer([Reply.say(text_call)], drops=["tools"]) as server:
        config = ModelConfig(provider="openai", model="m", base_url=server.openai_url)
        live = _ask(get_model(config, cache=ResponseCache(path)), list(CONVERSATION), [PRICE])
    # the server is gone: replay must not probe or call it
    replayed = _ask(
        get_model(config, cache=ResponseCache(path, mode="replay")), list(CONVERSATION), [PRICE]
    )
    assert replayed.cached and replayed.message == live.message


def test_the_probe_reads_equal_counts_as_dropped_and_missing_usage_as_kept() -> None:
    assert support_from_counts(120, 80, 95).model_dump() == {
        "tools": True,
        "system": True,
        "probed": True,
    }
    dropped = support_from_counts(80, 80, 80)
    assert (dropped.tools, dropped.system) == (False, False)
    unknown = support_from_counts(0, 0, 0)
    assert (unknown.tools, unknown.system) == (True, True)
