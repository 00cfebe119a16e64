"""OpenAI chat-completions adapter: the JSON that goes over the wire and how replies read."""

from __future__ import annotations

import asyncio

import pytest

from tradebench.errors import ConfigError
from tradebench.llm.loopback import Reply
from tradebench.llm.types import Message, ModelConfig, ToolCall

CONVERSATION = [
    Message(role="system", content="You trade."),
    Message(role="user", content="Check AAPL."),
    Message(
        role="assistant",
        tool_calls=[
            ToolCall(id="c1", name="get_price", arguments={"symbol": "AAPL"}, raw_arguments="")
        ],
    ),
    Message(role="tool", content='{"close": 190.5}', tool_call_id="c1", name="get_price"),
]


def test_request_body_is_chat_completions(loopback, make_model, price_tool):
    loopback.push(Reply.tool("get_price", {"symbol": "MSFT"}))
    model = make_model(temperature=0.3, max_tokens=77, extra={"top_p": 0.5, "seed": 7})
    asyncio.run(model.generate(CONVERSATION, [price_tool], "auto"))
    (req,) = loopback.requests
    assert req.path == "/v1/chat/completions"
    body = req.body
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.3 and body["max_tokens"] == 77
    assert body["top_p"] == 0.5 and body["seed"] == 7
    assert body["messages"][0] == {"role": "system", "content": "You trade."}
    assert body["messages"][1] == {"role": "user", "content": "Check AAPL."}
    assistant = body["messages"][2]
    assert assistant["content"] == ""  # never null: llama.cpp rejects null with tool calls
    assert assistant["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_price", "arguments": '{"symbol": "AAPL"}'},
        }
    ]
    assert body["messages"][3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": '{"close": 190.5}',
    }
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_price",
                "description": price_tool.description,
                "parameters": price_tool.parameters,
            },
        }
    ]
    assert body["tool_choice"] == "auto"


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("get_price", {"type": "function", "function": {"name": "get_price"}}),
    ],
)
def test_tool_choice_mapping(loopback, make_model, price_tool, choice, wire):
    asyncio.run(make_model().generate(CONVERSATION[:2], [price_tool], choice))
    assert loopback.requests[0].body["tool_choice"] == wire


def test_no_tools_sends_no_tool_fields(loopback, make_model):
    reply = asyncio.run(make_model().generate(CONVERSATION[:2]))
    assert "tools" not in loopback.requests[0].body
    assert "tool_choice" not in loopback.requests[0].body
    assert reply.message.content == "ok" and reply.finish_reason == "stop"


def test_tool_call_reply_is_normalised(loopback, make_model, price_tool):
    loopback.push(Reply.tools(("get_price", {"symbol": "A"}), ("get_price", {"symbol": "B"})))
    reply = asyncio.run(make_model().generate(CONVERSATION[:2], [price_tool], "required"))
    assert reply.finish_reason == "tool_calls"
    assert [c.arguments for c in reply.message.tool_calls] == [{"symbol": "A"}, {"symbol": "B"}]
    assert all(c.raw_arguments and not c.recovered for c in reply.message.tool_calls)
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    assert reply.parse_error is None and reply.latency_s > 0


@pytest.mark.parametrize(
    "content",
    [
        '{"name": "get_price", "arguments": {"symbol": "AAPL"}}',
        'Sure.\n<tool_call>\n{"name": "get_price", "arguments": {"symbol": "AAPL"}}\n</tool_call>',
        '```json\n[{"name": "get_price", "parameters": {"symbol": "AAPL"}}]\n```',
    ],
)
def test_call_written_as_text_is_recovered(loopback, make_model, price_tool, content):
    loopback.push(Reply.say(content))
    reply = asyncio.run(make_model().generate(CONVERSATION[:2], [price_tool], "auto"))
    (call,) = reply.message.tool_calls
    assert call.recovered and call.name == "get_price" and call.arguments == {"symbol": "AAPL"}
    assert reply.finish_reason == "tool_calls" and reply.parse_error is None


def test_text_naming_an_unknown_tool_is_not_a_call(loopback, make_model, price_tool):
    loopback.push(Reply.say('{"name": "rm_rf", "arguments": {}}'))
    reply = asyncio.run(make_model().generate(CONVERSATION[:2], [price_tool], "auto"))
    assert reply.message.tool_calls == [] and reply.finish_reason == "stop"


def test_raw_newlines_in_strings_parse_leniently(loopback, make_model, price_tool):
    raw = '{"symbol": "AA\nPL"}'  # a raw control character: invalid strict JSON
    loopback.push(Reply.say(f'{{"name": "get_price", "arguments": {raw}}}'))
    reply = asyncio.run(make_model().generate(CONVERSATION[:2], [price_tool], "auto"))
    assert reply.message.tool_calls[0].arguments == {"symbol": "AA\nPL"}


def test_key_comes_from_named_env_variable(loopback, make_model, monkeypatch):
    monkeypatch.setenv("TB_TEST_OPENAI_KEY", "sk-wire-test-0123456789")
    asyncio.run(make_model(api_key_env="TB_TEST_OPENAI_KEY").generate(CONVERSATION[:2]))
    assert loopback.requests[0].headers["authorization"] == "Bearer sk-wire-test-0123456789"


def test_custom_base_url_gets_no_default_key(loopback, make_model, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-public-api-key-must-not-leak")
    asyncio.run(make_model().generate(CONVERSATION[:2]))
    assert "must-not-leak" not in loopback.requests[0].headers["authorization"]


def test_missing_key_variable_is_a_config_error(make_model, monkeypatch):
    monkeypatch.delenv("TB_UNSET_KEY", raising=False)
    with pytest.raises(ConfigError, match="TB_UNSET_KEY"):
        make_model(api_key_env="TB_UNSET_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_model(base_url=None)


def test_forcing_an_unknown_tool_is_a_config_error(make_model, price_tool):
    with pytest.raises(ConfigError, match="not among the tools"):
        asyncio.run(make_model().generate(CONVERSATION[:2], [price_tool], "submit"))


def test_shorthand_parse():
    cfg = ModelConfig.parse("openai:gpt-4.1-mini", base_url="http://127.0.0.1:1/v1")
    assert (cfg.provider, cfg.model, cfg.base_url) == (
        "openai",
        "gpt-4.1-mini",
        "http://127.0.0.1:1/v1",
    )
    assert ModelConfig.parse("openai:qwen2.5:7b").model == "qwen2.5:7b"
    assert ModelConfig.parse("anthropic:claude-sonnet-4-5", max_tokens=9).max_tokens == 9
    for bad in ("gpt-4", "bedrock:x", "openai:"):
        with pytest.raises(ConfigError, match="provider:model"):
            ModelConfig.parse(bad)


def test_extra_must_not_carry_credentials():
    with pytest.raises(ValueError, match="credentials"):
        ModelConfig(provider="openai", model="m", extra={"headers": {"Authorization": "x"}})
    with pytest.raises(ValueError, match="credentials"):
        ModelConfig(provider="openai", model="m", extra={"api_key": "x"})
    assert ModelConfig(provider="openai", model="m", extra={"max_completion_tokens": 5}).extra


def test_max_completion_tokens_replaces_max_tokens(loopback, make_model):
    asyncio.run(make_model(extra={"max_completion_tokens": 33}).generate(CONVERSATION[:2]))
    body = loopback.requests[0].body
    assert body["max_completion_tokens"] == 33 and "max_tokens" not in body
