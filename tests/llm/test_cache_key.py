"""The cache key is the request's whole identity: changing any field a reply depends on
changes the key, so a cached reply is never served for a different request.

A property over every field of `ModelConfig` (a new field fails here until it is either in
the key or listed as not affecting replies), every message and tool field, the tool choice
and the sample index.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tradebench.llm.cache import canonical_request, request_key
from tradebench.llm.types import Message, ModelConfig, ToolCall, ToolSpec

NOT_IN_KEY = {"base_url", "api_key_env", "endpoint"}
"""Where the model is served and how it is reached (an endpoint preset only adds the URL,
the key variable and the rung the ladder starts on): the same model replays after a move.
(`forced_choice` is keyed when a form is pinned, as `tool_protocol` is when not `auto`; the
ladder's default leaves the key as it was, and the rung it reached is not keyed.)"""
BASE = ModelConfig(provider="openai", model="m", temperature=0.2, max_tokens=64, extra={"a": 1})
TOOL = ToolSpec(name="t", description="d", parameters={"type": "object", "properties": {}})
CALL = ToolCall(id="c1", name="t", arguments={"x": 1}, raw_arguments='{"x": 1}')
MESSAGES = [
    Message(role="system", content="s"),
    Message(role="user", content="u"),
    Message(role="assistant", content="", tool_calls=[CALL]),
    Message(role="tool", content="r", tool_call_id="c1", name="t"),
]
CHANGED_CONFIG: dict[str, Any] = {
    "provider": "anthropic",
    "model": "n",
    "temperature": 0.3,
    "max_tokens": 65,
    "extra": {"a": 2},
    "base_url": "http://elsewhere/v1",
    "api_key_env": "OTHER_KEY",
    "tool_protocol": "text",
    "forced_choice": "required",
    "endpoint": "vllm",
}


def _key(
    config: ModelConfig = BASE,
    messages: list[Message] = MESSAGES,
    tools: tuple[ToolSpec, ...] = (TOOL,),
    choice: str = "auto",
    sample: int = 0,
) -> str:
    return request_key(canonical_request(config, messages, tools, choice), sample)


def test_every_config_field_is_in_the_key_or_declared_not_to_be() -> None:
    assert set(CHANGED_CONFIG) == set(ModelConfig.model_fields)  # a new field must be listed
    for name, value in CHANGED_CONFIG.items():
        changed = _key(BASE.model_copy(update={name: value}))
        assert (changed == _key()) == (name in NOT_IN_KEY), name


def _with(message: Message, **update: Any) -> list[Message]:
    out = list(MESSAGES)
    out[out.index(message)] = message.model_copy(update=update)
    return out


def test_every_message_tool_and_choice_field_is_in_the_key() -> None:
    variants = [
        _key(messages=MESSAGES[:-1]),
        _key(messages=_with(MESSAGES[0], content="s2")),
        _key(messages=_with(MESSAGES[1], role="system")),
        _key(messages=_with(MESSAGES[2], tool_calls=[CALL.model_copy(update={"name": "u"})])),
        _key(messages=_with(MESSAGES[2], tool_calls=[CALL.model_copy(update={"id": "c2"})])),
        _key(messages=_with(MESSAGES[2], tool_calls=[CALL.model_copy(update={"arguments": {}})])),
        _key(messages=_with(MESSAGES[3], tool_call_id="c9")),
        _key(messages=_with(MESSAGES[3], name="u")),
        _key(tools=()),
        _key(tools=(TOOL.model_copy(update={"description": "e"}),)),
        _key(tools=(TOOL.model_copy(update={"parameters": {"type": "object"}}),)),
        _key(choice="t"),
        _key(sample=1),
    ]
    assert len({_key(), *variants}) == 1 + len(variants)


@settings(max_examples=200, deadline=None)
@given(
    temperature=st.floats(0, 2, allow_nan=False),
    max_tokens=st.integers(16, 4096),
    extra=st.dictionaries(st.sampled_from(["top_p", "seed", "stop"]), st.integers(0, 9)),
    sample=st.integers(0, 10_000),
    content=st.text(max_size=30),
)
def test_distinct_requests_never_share_a_key(
    temperature: float, max_tokens: int, extra: dict, sample: int, content: str
) -> None:
    config = BASE.model_copy(
        update={"temperature": temperature, "max_tokens": max_tokens, "extra": extra}
    )
    messages = [Message(role="user", content=content)]
    key = _key(config, messages, (), "auto", sample)
    assert key == _key(config, messages, (), "auto", sample)  # the same request, the same key
    assert key != _key(config, messages, (), "auto", sample + 1)
    assert key != _key(config.model_copy(update={"max_tokens": max_tokens + 1}), messages, (),
                       "auto", sample)  # fmt: skip
    assert key != _key(config.model_copy(update={"extra": {**extra, "n": 1}}), messages, (),
                       "auto", sample)  # fmt: skip


def test_a_chosen_tool_protocol_is_in_the_key_and_auto_keeps_old_keys() -> None:
    """`native` and `text` are different experiments; `auto` (the default) adds nothing to
    the canonical request, so caches written before the setting existed still replay."""
    keys = {
        p: _key(BASE.model_copy(update={"tool_protocol": p})) for p in ("auto", "native", "text")
    }
    assert len(set(keys.values())) == 3
    assert '"tool_protocol"' not in canonical_request(BASE, MESSAGES, (TOOL,), "auto")
