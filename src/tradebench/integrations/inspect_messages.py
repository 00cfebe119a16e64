"""Translation between tradebench's chat types and inspect_ai's.

Our benchmarks build every prompt and tool themselves (`llm.types`); inspect drives the
model. These pure functions carry a conversation, its tools and the tool choice over to
inspect's types, and bring inspect's `ModelOutput` back as our `ChatResponse`, so the
benchmark code runs unchanged with an inspect model behind it.

inspect's `ToolInfo` keeps a subset of JSON Schema (no `maxItems`, `minItems`, `$ref`);
the parts it drops are not shown to the model, but our tools still check every argument
against their full schema and answer a violation with a structured error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolFunction, ToolInfo, ToolParams

from tradebench.llm.types import ChatResponse, Message, ToolCall, ToolChoice, ToolSpec, Usage

FINISH_REASONS = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "max_tokens": "length",
    "model_length": "length",
    "content_filter": "content_filter",
}
"""inspect's stop reasons -> ours (anything else reads as `stop`)."""
EMPTY_REPLY = "empty reply: no text and no tool call"


def to_inspect_message(message: Message) -> ChatMessage:
    """One of our messages as inspect's message of the same role."""
    if message.role == "system":
        return ChatMessageSystem(content=message.content)
    if message.role == "user":
        return ChatMessageUser(content=message.content)
    if message.role == "tool":
        return ChatMessageTool(
            content=message.content, tool_call_id=message.tool_call_id, function=message.name
        )
    calls = [
        InspectToolCall(id=c.id, function=c.name, arguments=dict(c.arguments))
        for c in message.tool_calls
    ]
    return ChatMessageAssistant(content=message.content, tool_calls=calls or None)


def to_inspect_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """A whole conversation in inspect's types, in order."""
    return [to_inspect_message(m) for m in messages]


def to_inspect_tool(spec: ToolSpec) -> ToolInfo:
    """Our tool spec as inspect's `ToolInfo` (name, description, argument schema)."""
    return ToolInfo(
        name=spec.name,
        description=spec.description,
        parameters=ToolParams.model_validate(spec.parameters),
    )


def to_inspect_choice(choice: ToolChoice) -> ToolChoice | ToolFunction:
    """Our tool choice in inspect's terms (`required` is inspect's `any`)."""
    if choice in ("auto", "none"):
        return choice
    if choice == "required":
        return "any"
    return ToolFunction(name=choice)


def _call(call: InspectToolCall) -> ToolCall:
    raw = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
    return ToolCall(
        id=call.id, name=call.function, arguments=dict(call.arguments), raw_arguments=raw
    )


def from_inspect_output(output: ModelOutput) -> ChatResponse:
    """inspect's reply as our normalised `ChatResponse`.

    A tool call whose arguments inspect could not parse is dropped from the reply and
    named in `parse_error`, so the tool loop answers it as an unreadable reply (our
    adapters would answer the call itself; inspect does not keep the raw text to show).
    """
    message = output.message
    calls = list(message.tool_calls or [])
    usable = [c for c in calls if c.parse_error is None]
    problems = [f"tool call {c.function!r}: {c.parse_error}" for c in calls if c.parse_error]
    text = message.text
    if output.error:
        problems.append(f"model error: {output.error}")
    elif not text.strip() and not calls:
        problems.append(EMPTY_REPLY)
    usage = output.usage
    return ChatResponse(
        message=Message(role="assistant", content=text, tool_calls=[_call(c) for c in usable]),
        usage=Usage(
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
        ),
        finish_reason=FINISH_REASONS.get(output.stop_reason, "stop"),
        latency_s=float(output.time or 0.0),
        parse_error="; ".join(problems) or None,
    )
