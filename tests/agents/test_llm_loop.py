"""The shared LLM tool loop against a real loopback server, asserting on the wire JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from tradebench.agents.tool_loop import LoopBudgetExceeded, LoopConfig, LoopResult, run_tool_loop
from tradebench.agents.tools import ArgumentError, SubmitTool, Tool
from tradebench.errors import ConfigError, ProviderError, ToolError
from tradebench.llm.base import ChatModel, get_model
from tradebench.llm.budget import Budget, BudgetConfig
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, Reply, research_responder
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig, ToolSpec

PRICES = {"AAPL": 190.5, "MSFT": 410.0}


class Order(BaseModel):
    symbol: str = Field(max_length=8)
    side: Literal["BUY", "SELL"]
    weight: float = Field(ge=0, le=1)


class Action(BaseModel):
    orders: list[Order] = Field(max_length=3)
    reason: str = Field(max_length=80)


def _no_shorts(action: Action) -> Action:
    for order in action.orders:
        if order.symbol not in PRICES:
            raise ToolError(f"unknown symbol {order.symbol}; tradable: {sorted(PRICES)}")
    return action


def _get_price(args: dict[str, Any]) -> dict[str, Any]:
    if args["symbol"] not in PRICES:
        raise ToolError(f"no such symbol: {args['symbol']}")
    return {"symbol": args["symbol"], "close": PRICES[args["symbol"]]}


PRICE = Tool(
    spec=ToolSpec(
        name="get_price",
        description="Last close of a stock.",
        parameters={
            "type": "object",
            "properties": {"symbol": {"type": "string", "maxLength": 8}},
            "required": ["symbol"],
            "additionalProperties": False,
        },
    ),
    fn=_get_price,
)
SUBMIT = SubmitTool.from_model("submit", "Submit orders.", Action, check=_no_shorts)
GOOD = {"orders": [{"symbol": "AAPL", "side": "BUY", "weight": 0.5}], "reason": "cheap"}
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, jitter=0.0, timeout_s=5)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def _model(server: LoopbackServer, provider: str = "openai", **layers: Any) -> ChatModel:
    url = server.openai_url if provider == "openai" else server.anthropic_url
    config = ModelConfig(provider=provider, model="test-model", base_url=url, max_tokens=200)
    return get_model(config, retry=FAST, **layers)


def _run(model: ChatModel, config: LoopConfig | None = None) -> LoopResult:
    return asyncio.run(
        run_tool_loop(
            model,
            system="You trade.",
            user="Decide on AAPL.",
            tools=[PRICE],
            submit=SUBMIT,
            config=config,
        )
    )


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Tool results in a recorded request, either wire format, parsed as JSON."""
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
def test_research_then_forced_submission(server, provider):
    server.push(
        Reply.tool("get_price", {"symbol": "AAPL"}),
        Reply.tool("get_price", {"symbol": "MSFT"}),
        Reply.say("I have what I need."),
        Reply.tool("submit", GOOD),
    )
    result = _run(_model(server, provider))
    assert result.stop_reason == "submitted" and not result.fallback
    assert result.action == Action.model_validate(GOOD)
    assert (result.research_calls, result.submission_attempts, result.retries) == (2, 1, 0)
    assert [c.valid for c in result.tool_calls] == [True, True, True]
    assert [c.phase for c in result.model_calls] == ["research"] * 3 + ["submit"]
    bodies = [r.body for r in server.requests]
    if provider == "openai":
        assert [b["tool_choice"] for b in bodies[:3]] == ["auto"] * 3
        assert bodies[3]["tool_choice"] == {"type": "function", "function": {"name": "submit"}}
        assert bodies[3]["messages"][-1] == {
            "role": "user",
            "content": "Research is over. Call `submit` now with your final decision.",
        }
    else:
        assert [b["tool_choice"] for b in bodies[:3]] == [{"type": "auto"}] * 3
        assert bodies[3]["tool_choice"] == {"type": "tool", "name": "submit"}
    assert _tool_results(bodies[2]) == [
        {"symbol": "AAPL", "close": 190.5},
        {"symbol": "MSFT", "close": 410.0},
    ]
    assert result.usage.input_tokens == sum(c.usage.input_tokens for c in result.model_calls) > 0


def test_bad_research_calls_get_structured_errors(server):
    server.push(
        Reply.truncated("get_price", {"symbol": "AAPL"}),  # malformed JSON
        Reply.tool("get_price", {"ticker": "AAPL"}),  # schema violation
        Reply.tool("get_price", {"symbol": "TSLA"}),  # ToolError from the tool
        Reply.tool("get_news", {}),  # unknown tool
        Reply.tool("submit", GOOD),
    )
    result = _run(_model(server))
    kinds = [c.error_kind for c in result.tool_calls]
    assert kinds == ["malformed_json", "invalid_arguments", "tool_error", "unknown_tool", None]
    assert result.parse_failures == 1 and result.action is not None
    assert (len(result.tool_calls), result.valid_tool_calls) == (5, 1)
    errors = _tool_results(server.requests[-1].body)
    assert errors[0]["error"]["type"] == "malformed_json"
    assert errors[1]["error"]["issues"][0]["path"] == "(root)"
    assert "symbol" in errors[1]["error"]["issues"][0]["message"]
    assert errors[2]["error"] == {"type": "tool_error", "message": "no such symbol: TSLA"}
    assert "get_price" in errors[3]["error"]["available"]


def test_research_is_capped(server):
    server.responder = research_responder("get_price", {"symbol": "AAPL"}, calls=100)
    server.push(
        *[
            Reply.tools(("get_price", {"symbol": "AAPL"}), ("get_price", {"symbol": "MSFT"}))
            for _ in range(2)
        ]
    )
    result = _run(_model(server), LoopConfig(max_tool_calls=3))
    assert result.research_calls == 3
    assert [c.error_kind for c in result.tool_calls[:4]] == [None, None, None, "over_limit"]
    assert result.model_calls[-1].phase == "submit" and result.stop_reason == "submitted"


def test_invalid_submissions_are_retried_with_feedback(server):
    bad_schema = {"orders": [{"symbol": "AAPL", "side": "HOLD", "weight": 0.5}], "reason": "x"}
    bad_constraint = {"orders": [{"symbol": "TSLA", "side": "BUY", "weight": 0.5}], "reason": "x"}
    server.push(
        Reply.say("done"),
        Reply.tool("submit", bad_schema),
        Reply.truncated("submit", GOOD),
        Reply.tool("submit", bad_constraint),
        Reply.tool("submit", GOOD),
    )
    result = _run(_model(server))
    assert result.action is not None and (result.submission_attempts, result.retries) == (4, 3)
    assert [c.error_kind for c in result.tool_calls] == ["rejected"] * 3 + [None]
    feedback = _tool_results(server.requests[-1].body)
    assert feedback[0]["error"]["attempts_left"] == 3
    assert feedback[0]["error"]["issues"][0]["path"] == "orders/0/side"
    assert "not valid JSON" in feedback[1]["error"]["message"]
    assert "unknown symbol TSLA" in feedback[2]["error"]["message"]
    assert feedback[2]["error"]["attempts_left"] == 1


def test_fallback_after_retries_run_out(server):
    server.push(Reply.say("done"), *[Reply.tool("submit", {"orders": "all in"})] * 4)
    result = _run(_model(server))
    assert result.fallback and result.action is None and result.stop_reason == "fallback"
    assert (result.submission_attempts, result.retries) == (4, 3)
    assert len(server.requests) == 5  # no fifth submission attempt


def test_unreadable_replies_are_counted_not_fatal(server):
    server.push(
        Reply.garbage(),
        Reply.empty(),  # research: feedback, keep going
        Reply.say('<tool_call>{"name": "get_price", "arguments": {"symbol": "AAPL"}}</tool_call>'),
        Reply.say("done"),
        Reply.garbage(),  # submission attempt 1: no call
        Reply.say("I would rather not."),  # attempt 2: text only
        Reply.tool("submit", GOOD),
    )
    result = _run(_model(server))
    assert result.action is not None and result.parse_failures == 3
    assert result.recovered_calls == 1 and result.tool_calls[0].recovered
    assert result.tool_calls[0].valid and result.submission_attempts == 3
    last = server.requests[-1].body["messages"]
    notes = [
        json.loads(m["content"])["error"]["type"]
        for m in last
        if m["role"] == "user" and m["content"].startswith('{"error"')
    ]
    assert notes == ["unreadable_reply", "unreadable_reply", "no_submission", "no_submission"]


def test_early_submission_in_research(server):
    server.push(Reply.tool("submit", GOOD))
    result = _run(_model(server))
    assert result.action is not None and len(server.requests) == 1
    assert server.requests[0].body["tool_choice"] == "auto"


def test_replay_is_byte_identical_without_the_server(server, tmp_path):
    server.push(
        Reply.tool("get_price", {"symbol": "AAPL"}),
        Reply.truncated("get_price", {"symbol": "MSFT"}),
        Reply.garbage(),
        Reply.say("done"),
        Reply.tool("submit", {"orders": [], "reason": "x" * 200}),  # too long: rejected
        Reply.tool("submit", GOOD),
    )
    path = tmp_path / "cache.sqlite"
    recorded = _run(_model(server, cache=ResponseCache(path)))
    server.stop()
    with pytest.raises(ProviderError):  # the server really is off
        _run(_model(server))
    replayed = _run(_model(server, cache=ResponseCache(path, mode="replay")))
    assert replayed.model_dump_json() == recorded.model_dump_json()
    assert recorded.retries == 1 and recorded.parse_failures == 2


def test_budget_stops_the_loop_with_a_partial_record(server):
    server.responder = research_responder("get_price", {"symbol": "AAPL"}, calls=50)
    budget = Budget(BudgetConfig(max_tokens=2500))
    with pytest.raises(LoopBudgetExceeded, match="token budget reached") as info:
        _run(_model(server, budget=budget))
    partial = info.value.result
    assert partial.stop_reason == "budget" and partial.action is None and not partial.fallback
    assert len(partial.model_calls) == len(server.requests) == budget.snapshot().calls >= 2


def test_tool_names_must_be_unique(server):
    twin = Tool(spec=SUBMIT.spec, fn=lambda args: {})
    with pytest.raises(ConfigError, match="unique"):
        asyncio.run(
            run_tool_loop(_model(server), system="s", user="u", tools=[twin], submit=SUBMIT)
        )


def test_argument_error_carries_issues():
    with pytest.raises(ArgumentError) as info:
        PRICE.check({"symbol": "WAYTOOLONGSYMBOL"})
    assert info.value.issues[0]["path"] == "symbol"
