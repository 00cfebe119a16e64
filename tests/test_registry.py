"""One registry mechanism for every kind of name: entries by path imported on use, `module:Class`
paths where allowed, collisions refused naming both sources, and a provider registered in code
accepted everywhere a provider is named (config, shorthand, spec, `get_model`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tradebench.agents.baselines import CashAgent, EqualWeightAgent
from tradebench.errors import ConfigError
from tradebench.llm.base import get_model
from tradebench.llm.providers import PROVIDERS, provider
from tradebench.llm.types import ChatResponse, Message, ModelConfig, Usage
from tradebench.registry import Registry, Spec
from tradebench.runs.spec import RunSpec


def test_an_entry_by_path_is_imported_on_use_and_built_with_its_arguments() -> None:
    agents: Registry[Any] = Registry("agent")
    agents.register("ew", "tradebench.agents.baselines:EqualWeightAgent")
    assert agents.entries["ew"] == "tradebench.agents.baselines:EqualWeightAgent"
    built, spec = agents.build("ew", every=3)
    assert isinstance(built, EqualWeightAgent) and built.every == 3
    assert spec == Spec(name="ew", args={"every": 3})
    assert agents.entries["ew"] is EqualWeightAgent  # imported once, kept


def test_a_path_names_an_entry_only_where_the_registry_allows_it() -> None:
    path = "tradebench.agents.baselines:CashAgent"
    assert Registry("agent", paths=True).get(path) is CashAgent
    with pytest.raises(ConfigError, match="unknown thing"):
        Registry("thing").get(path)
    with pytest.raises(ConfigError, match=r"cannot import agent 'no_such_pkg\.mod:X'"):
        Registry("agent", paths=True).get("no_such_pkg.mod:X")
    with pytest.raises(ConfigError, match="has no 'Nope'"):
        Registry("agent", paths=True).get("tradebench.agents.baselines:Nope")


def test_names_collide_in_one_line_naming_both_sources() -> None:
    kinds: Registry[Any] = Registry("agent")
    kinds.register("cash", "tradebench.agents.baselines:CashAgent")
    with pytest.raises(ConfigError) as caught:

        @kinds.register("cash")
        def other() -> None: ...

    message = str(caught.value)
    assert "agent name 'cash' is registered twice" in message
    assert "tradebench.agents.baselines:CashAgent" in message and "other" in message


def test_unknown_names_and_bad_arguments_are_config_errors() -> None:
    agents: Registry[Any] = Registry("agent")
    agents.register("cash", CashAgent)
    with pytest.raises(ConfigError, match="unknown agent 'x'; known: cash"):
        agents.build("x")
    with pytest.raises(ConfigError, match="bad arguments for agent 'cash'"):
        agents.build("cash", k=3)


class EchoModel:
    """A provider's adapter that answers with the last message's text."""

    def __init__(self, config: ModelConfig, **transport: Any) -> None:
        self.config = config

    async def generate(self, messages: list[Message], *args: Any, **kw: Any) -> ChatResponse:
        return ChatResponse(
            message=Message(role="assistant", content=messages[-1].content),
            usage=Usage(input_tokens=1, output_tokens=1),
            finish_reason="stop",
            latency_s=0.0,
        )


@pytest.fixture
def echo_provider() -> Iterator[str]:
    provider("test_echo")(EchoModel)
    yield "test_echo"
    PROVIDERS.unregister("test_echo")


def test_a_provider_registered_in_code_is_accepted_wherever_a_provider_is_named(
    echo_provider: str,
) -> None:
    config = ModelConfig.parse(f"{echo_provider}:any-name")
    assert config == ModelConfig(provider=echo_provider, model="any-name")
    spec = RunSpec.model_validate(
        {
            "dataset": "synthetic:cn",
            "agents": [
                {"name": "a", "model": {"provider": echo_provider, "model": "m"}},
                {"name": "b", "provider": echo_provider, "model": "m"},  # the earlier layout
            ],
        }
    )
    assert {a.model_config_().provider for a in spec.agents} == {echo_provider}
    model = get_model(config)
    reply = asyncio.run(model.generate([Message(role="user", content="hello")]))
    assert reply.message.content == "hello"


def test_an_unregistered_provider_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown provider 'test_echo'; known: anthropic, openai"):
        ModelConfig(provider="test_echo", model="m")
