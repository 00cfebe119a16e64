"""Adapter for Anthropic's native Messages API (`tool_use` / `tool_result` content blocks).

System messages become the top-level `system` field; tool results travel as `tool_result`
blocks in a user turn; consecutive turns of one role are merged, as the API expects
alternating roles. `tool_choice` maps to `{"type": "auto" | "none" | "any" | "tool"}`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tradebench.errors import ConfigError
from tradebench.llm.adapter import HttpChatModel, finish_parse_error, unreadable
from tradebench.llm.parsing import call_errors
from tradebench.llm.types import ChatResponse, Message, ToolCall, ToolChoice, ToolSpec, Usage

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
    "pause_turn": "stop",
}


def _import_sdk() -> Any:
    try:
        import anthropic
    except ImportError as exc:  # pragma: no cover - anthropic is a core dependency
        raise ConfigError(
            "the anthropic provider needs the `anthropic` package: pip install 'anthropic>=0.40'"
        ) from exc
    return anthropic


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """(wire role, content blocks) of one non-system message."""
    if message.role == "tool":
        return "user", [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in message.tool_calls
        )
    return message.role, blocks


def wire_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, Messages-API turns) with consecutive same-role turns merged."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1] = {"role": role, "content": [*turns[-1]["content"], *blocks]}
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def wire_tool_choice(tool_choice: ToolChoice) -> dict[str, str]:
    """`auto`/`none` as is, `required` as `any`, a tool name as `{"type": "tool"}`."""
    if tool_choice in ("auto", "none"):
        return {"type": tool_choice}
    if tool_choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": tool_choice}


def read_usage(raw: dict[str, Any]) -> Usage:
    """Token counts of a Messages-API `usage`: its `input_tokens` leave out the prompt
    tokens read from (`cache_read_input_tokens`) and written to the prompt cache, which are
    added back, so `Usage.input_tokens` is the whole prompt as on the OpenAI side. Thinking
    tokens are in `output_tokens` and not reported apart (`reasoning_tokens` stays 0)."""
    read = int(raw.get("cache_read_input_tokens") or 0)
    written = int(raw.get("cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0) + read + written,
        output_tokens=int(raw.get("output_tokens") or 0),
        cached_input_tokens=read,
    )


def parse_message(raw: bytes, latency_s: float) -> ChatResponse:
    """Read a Messages-API body into a `ChatResponse`; failures go in `parse_error`."""
    try:
        data = json.loads(raw)
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        for block in data["content"]:
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "thinking":
                thoughts.append(str(block.get("thinking", "")))
            elif block.get("type") == "tool_use":
                args = block.get("input")
                args = args if isinstance(args, dict) else {}
                calls.append(
                    ToolCall(
                        id=str(block["id"]),
                        name=str(block["name"]),
                        arguments=args,
                        raw_arguments=json.dumps(args, ensure_ascii=False),
                    )
                )
        usage = read_usage(data.get("usage") or {})
        stop = str(data.get("stop_reason"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        text = raw[:120].decode("utf-8", "replace").replace("\n", " ")
        return unreadable(f"unreadable body ({type(exc).__name__}): {text!r}", latency_s)
    message = Message(role="assistant", content="".join(texts), tool_calls=calls)
    response = ChatResponse(
        message=message,
        usage=usage,
        finish_reason=_FINISH.get(stop, stop),
        latency_s=latency_s,
        reasoning="\n\n".join(thoughts),
    )
    error = finish_parse_error(message, call_errors(response))
    return response if error is None else response.model_copy(update={"parse_error": error})


class AnthropicChatModel(HttpChatModel):
    """`ChatModel` over Anthropic's `/v1/messages`."""

    default_key_env = "ANTHROPIC_API_KEY"
    client_class = "AsyncAnthropic"

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        sample_index: int = 0,
    ) -> dict[str, Any]:
        """The Messages API body; it has no sampling seed, so a sample differs from another
        only in the cache key (and in the model's own randomness at temperature > 0)."""
        system, turns = wire_messages(messages)
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": turns,
            "max_tokens": self.config.max_tokens,
            "temperature": self.config.temperature,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
            body["tool_choice"] = wire_tool_choice(tool_choice)
        return body

    def _sdk(self) -> Any:
        return _import_sdk()

    async def _create(self, body: dict[str, Any]) -> bytes:
        text = await self.client.post(
            "/v1/messages", body={**body, **self.config.extra}, cast_to=str
        )
        return text.encode()

    def _parse(
        self, raw: bytes, tools: Sequence[ToolSpec], tool_choice: ToolChoice, latency_s: float
    ) -> ChatResponse:
        return parse_message(raw, latency_s)
