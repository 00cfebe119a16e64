"""Adapter for OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter).

Uses the official `openai` SDK with its raw-response interface so that a garbage body is
ours to count, not the SDK's to raise. Quirks of local servers handled here: an assistant
turn with tool calls carries `content: ""` (never null), and with `tool_choice="auto"` a
call written as JSON text in `content` is recovered client-side (`ToolCall.recovered`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tradebench.errors import ConfigError
from tradebench.llm.adapter import HttpChatModel, finish_parse_error, unreadable
from tradebench.llm.parsing import ArgumentsError, call_errors, parse_arguments, recover_calls
from tradebench.llm.types import ChatResponse, Message, ToolCall, ToolChoice, ToolSpec, Usage

_FINISH = {
    "function_call": "tool_calls",
    "tool_calls": "tool_calls",
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
}


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - openai is a core dependency
        raise ConfigError(
            "the openai provider needs the `openai` package: pip install 'openai>=1.40'"
        ) from exc
    return openai


def wire_message(message: Message) -> dict[str, Any]:
    """One normalised message in chat-completions form."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False),
                },
            }
            for c in message.tool_calls
        ]
    return out


def wire_tool_choice(tool_choice: ToolChoice) -> Any:
    """`auto` / `none` / `required` as is; a tool name as `{"type": "function", ...}`."""
    if tool_choice in ("auto", "none", "required"):
        return tool_choice
    return {"type": "function", "function": {"name": tool_choice}}


def _tool_call(raw_call: Any, index: int) -> ToolCall:
    fn = raw_call.get("function") or {}
    raw = fn.get("arguments")
    raw = raw if isinstance(raw, str) else json.dumps(raw or {}, ensure_ascii=False)
    try:
        args = parse_arguments(raw)
    except ArgumentsError:
        args = {}
    return ToolCall(
        id=str(raw_call.get("id") or f"call_{index}"),
        name=str(fn.get("name", "")),
        arguments=args,
        raw_arguments=raw,
    )


def parse_completion(
    raw: bytes, tools: Sequence[ToolSpec], tool_choice: ToolChoice, latency_s: float
) -> ChatResponse:
    """Read a chat-completions body into a `ChatResponse`; failures go in `parse_error`."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        msg = choice["message"]
        calls = [_tool_call(c, i) for i, c in enumerate(msg.get("tool_calls") or [])]
        content = msg.get("content") or ""
        usage_raw = data.get("usage") or {}
        usage = Usage(
            input_tokens=int(usage_raw.get("prompt_tokens") or 0),
            output_tokens=int(usage_raw.get("completion_tokens") or 0),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        text = raw[:120].decode("utf-8", "replace").replace("\n", " ")
        return unreadable(f"unreadable body ({type(exc).__name__}): {text!r}", latency_s)
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    if not calls and tools and tool_choice != "none":
        calls = recover_calls(content, {t.name for t in tools})
    finish = _FINISH.get(str(choice.get("finish_reason")), str(choice.get("finish_reason")))
    if calls and finish == "stop":
        finish = "tool_calls"
    message = Message(role="assistant", content=content, tool_calls=calls)
    response = ChatResponse(message=message, usage=usage, finish_reason=finish, latency_s=latency_s)
    error = finish_parse_error(message, call_errors(response))
    return response if error is None else response.model_copy(update={"parse_error": error})


class OpenAIChatModel(HttpChatModel):
    """`ChatModel` over any OpenAI-compatible `/chat/completions` endpoint."""

    default_key_env = "OPENAI_API_KEY"
    client_class = "AsyncOpenAI"

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        sample_index: int = 0,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [wire_message(m) for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": sample_index,  # the sample is the provider's sampling seed
        }
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
            body["tool_choice"] = wire_tool_choice(tool_choice)
        if "max_completion_tokens" in self.config.extra:
            del body["max_tokens"]
        return body

    def _sdk(self) -> Any:
        return _import_sdk()

    async def _create(self, body: dict[str, Any]) -> bytes:
        text = await self.client.post(
            "/chat/completions", body={**body, **self.config.extra}, cast_to=str
        )
        return text.encode()

    def _parse(
        self, raw: bytes, tools: Sequence[ToolSpec], tool_choice: ToolChoice, latency_s: float
    ) -> ChatResponse:
        return parse_completion(raw, tools, tool_choice, latency_s)
