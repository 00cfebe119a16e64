"""Endpoint presets: each preset's capability defaults hold against the loopback
personality that reproduces its endpoint, and the ladder still reaches a valid submission
there without them.

The oracle is written from the endpoints' documented behaviour, not from the preset table:
the rung a forced call must end on at each endpoint, and how many steps down the ladder a
configuration without the preset takes to get there (every form the endpoint refuses or
ignores, plus the research call's `auto` where even that is refused).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, Field

from tradebench.agents.tool_loop import LoopResult, run_tool_loop
from tradebench.agents.tools import SubmitTool, Tool
from tradebench.errors import ConfigError
from tradebench.llm.base import get_model
from tradebench.llm.loopback import LoopbackServer
from tradebench.llm.presets import PRESETS, preset
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig, ToolSpec

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.01, jitter=0.0, timeout_s=5)
KEY = "preset-test-key-5150"


class Action(BaseModel):
    orders: list[str] = Field(max_length=3)
    reason: str = Field(max_length=40)


SUBMIT = SubmitTool.from_model("submit_action", "Submit the decision.", Action)
PRICE = Tool(
    spec=ToolSpec(
        name="get_price",
        description="Last close of a stock.",
        parameters={"type": "object", "properties": {"s": {"type": "string", "maxLength": 8}}},
    ),
    fn=lambda args: {"close": 1.0},
)

# endpoint -> (rung its forced call ends on, steps down a plain configuration takes)
EXPECTED: dict[str, tuple[str, int]] = {
    "vllm": ("object", 0),
    "llama.cpp": ("required", 1),  # the object form runs as auto: the reply ignores it
    "ollama": ("auto", 2),  # tool_choice unread: object and required both ignored
    "lmstudio": ("required", 1),  # the object form refused
    "openrouter": ("object", 0),
    "deepseek": ("auto", 3),  # research's auto, the object form and required all refused
    "together": ("object", 0),
    "groq": ("object", 0),
    "dashscope": ("object", 0),
    "qwen": ("object", 0),
    "moonshot": ("auto", 2),  # none/auto only: object and required refused
    "zhipu": ("auto", 2),
}


def _loop(config: ModelConfig) -> LoopResult:
    model = get_model(config, retry=FAST)
    return asyncio.run(
        run_tool_loop(model, system="Decide.", user="Go.", tools=[PRICE], submit=SUBMIT)
    )


def _submit_rungs(result: LoopResult) -> list[Any]:
    return [c.tool_choice_rung for c in result.model_calls if c.phase == "submit"]


def test_every_named_endpoint_has_a_preset_and_an_expectation() -> None:
    assert set(EXPECTED) == set(PRESETS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_preset_starts_on_the_form_its_endpoint_takes(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = preset(name)
    if chosen.api_key_env is not None:
        monkeypatch.setenv(chosen.api_key_env, KEY)
    rung, plain_steps = EXPECTED[name]
    with LoopbackServer(quirks=chosen.quirks) as server:  # type: ignore[arg-type]
        fields = {"provider": "openai", "model": "m", "max_tokens": 200}
        with_preset = ModelConfig(**fields, endpoint=name, base_url=server.openai_url)
        result = _loop(with_preset)
        refused = [r for r in server.requests if r.reply == "error"]
        heard = {r.headers.get("authorization") for r in server.requests}
        plain = _loop(ModelConfig(**fields, base_url=server.openai_url))
    assert result.stop_reason == "submitted" and result.action == Action(orders=[], reason="x")
    assert _submit_rungs(result) == [rung]
    assert result.faults.tool_choice_fallbacks == 0 and refused == []  # no form wasted
    expected_auth = "Bearer no-key" if chosen.api_key_env is None else f"Bearer {KEY}"
    assert heard == {expected_auth}
    assert plain.stop_reason == "submitted" and plain.action == result.action
    assert _submit_rungs(plain) == [rung]
    assert plain.faults.tool_choice_fallbacks == plain_steps


def test_a_preset_fills_the_url_and_key_variable_unless_given() -> None:
    config = ModelConfig(provider="openai", model="deepseek-chat", endpoint="deepseek")
    assert config.base_url == "https://api.deepseek.com/v1"
    assert config.api_key_env == "DEEPSEEK_API_KEY"
    moved = ModelConfig(
        provider="openai", model="x", endpoint="vllm", base_url="http://10.0.0.2:9000/v1"
    )
    assert moved.base_url == "http://10.0.0.2:9000/v1" and moved.api_key_env is None
    with pytest.raises(ValueError, match="unknown endpoint 'nope'; known: dashscope"):
        ModelConfig(provider="openai", model="x", endpoint="nope")
    with pytest.raises(ConfigError, match="known:"):
        preset("nope")
