"""Anthropic Messages adapter: tool_use / tool_result blocks, tool_choice, system, headers."""

from __future__ import annotations

import asyncio

import pytest

from tradebench.llm.loopback import Reply, call_tag
from tradebench.llm.types import Message, ToolCall

CONVERSATION = [
    Message(role="system", content="You trade."),
    Message(role="user", content="Check AAPL and MSFT."),
    Message(
        role="assistant",
        content="Looking.",
        tool_calls=[
            ToolCall(id="tu1", name="get_price", arguments={"symbol": "AAPL"}),
            ToolCall(id="tu2", name="get_price", arguments={"symbol": "MSFT"}),
        ],
    ),
    Message(role="tool", content='{"close": 1}', tool_call_id="tu1", name="get_price"),
    Message(role="tool", content='{"close": 2}', tool_call_id="tu2", name="get_price"),
    Message(role="user", content="Now decide."),
]


def test_request_body_is_messages_api(loopback, make_model, price_tool, monkeypatch):
    monkeypatch.setenv("TB_TEST_ANTHROPIC_KEY", "sk-ant-wire-test-0123456789")
    model = make_model(
        "anthropic", api_key_env="TB_TEST_ANTHROPIC_KEY", max_tokens=55, temperature=0.2
    )
    asyncio.run(model.generate(CONVERSATION, [price_tool], "get_price"))
    (req,) = loopback.requests
    assert req.path == "/v1/messages"
    # the SDK decides the header (`x-api-key` in older releases, a bearer token in newer)
    key = "sk-ant-wire-test-0123456789"
    assert req.headers.get("x-api-key") == key or req.headers["authorization"] == f"Bearer {key}"
    assert "anthropic-version" in req.headers
    body = req.body
    assert body["system"] == "You trade."
    assert body["max_tokens"] == 55 and body["temperature"] == 0.2
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Check AAPL and MSFT."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "tu1", "name": "get_price", "input": {"symbol": "AAPL"}},
                {"type": "tool_use", "id": "tu2", "name": "get_price", "input": {"symbol": "MSFT"}},
            ],
        },
        # both tool results and the follow-up text merged into one user turn, results first
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu1", "content": '{"close": 1}'},
                {"type": "tool_result", "tool_use_id": "tu2", "content": '{"close": 2}'},
                {"type": "text", "text": "Now decide."},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "get_price",
            "description": price_tool.description,
            "input_schema": price_tool.parameters,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "get_price"}


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("get_price", {"type": "tool", "name": "get_price"}),
    ],
)
def test_tool_choice_mapping(loopback, make_model, price_tool, choice, wire):
    asyncio.run(make_model("anthropic").generate(CONVERSATION[:2], [price_tool], choice))
    assert loopback.requests[0].body["tool_choice"] == wire


def test_tool_use_reply_is_normalised(loopback, make_model, price_tool):
    loopback.push(Reply.tools(("get_price", {"symbol": "A"}), ("get_price", {"symbol": "B"})))
    reply = asyncio.run(make_model("anthropic").generate(CONVERSATION[:2], [price_tool]))
    assert reply.finish_reason == "tool_calls"
    ids = [c.id for c in reply.message.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith("toolu_lb") for i in ids)
    assert ids[0].endswith("_0") and ids[1].endswith("_1") and ids[0][:-2] == ids[1][:-2]
    assert call_tag(b"same request") == call_tag(b"same request") != call_tag(b"other")
    assert [c.arguments for c in reply.message.tool_calls] == [{"symbol": "A"}, {"symbol": "B"}]
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    assert reply.parse_error is None


def test_text_reply_and_stop_reason(loopback, make_model):
    loopback.push(Reply.say("Holding."))
    reply = asyncio.run(make_model("anthropic").generate(CONVERSATION[:2]))
    assert reply.message.content == "Holding." and reply.finish_reason == "stop"
    assert "tools" not in loopback.requests[0].body


def test_truncated_tool_use_is_a_parse_failure(loopback, make_model, price_tool):
    loopback.push(Reply.truncated("get_price", {"symbol": "A", "note": "b"}))
    reply = asyncio.run(make_model("anthropic").generate(CONVERSATION[:2], [price_tool]))
    assert reply.finish_reason == "length"
    assert "max_tokens" in reply.parse_error
