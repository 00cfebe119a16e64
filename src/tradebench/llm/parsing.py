"""Lenient reading of what models return: tool-call JSON and calls written as text.

Read leniently, validate strictly: raw newlines inside JSON strings, code fences and
`<tool_call>` tags are tolerated here; the tool's JSON Schema is enforced later.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from typing import Any

from tradebench.llm.types import ChatResponse, ToolCall

_DECODER = json.JSONDecoder(strict=False)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input")
_MAX_SCAN_CHARS = 20_000


class ArgumentsError(ValueError):
    """Tool-call arguments are not a JSON object."""


def parse_arguments(raw: str) -> dict[str, Any]:
    """Parse tool-call arguments leniently (raw control characters allowed in strings).

    An empty string means no arguments.

    Raises:
        ArgumentsError: Not JSON, truncated, or not an object.
    """
    text = raw.strip()
    if not text:
        return {}
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        reason = f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
        raise ArgumentsError(reason) from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def arguments_error(raw: str) -> str | None:
    """Why `raw` arguments cannot be used, or None when they parse to an object."""
    try:
        parse_arguments(raw)
    except ArgumentsError as exc:
        return str(exc)
    return None


def call_errors(response: ChatResponse) -> dict[str, str]:
    """Tool calls of `response` that must not be executed, by call id, with the reason.

    A call is unusable when its raw arguments do not parse, or when it is the last call
    of a reply cut off at `max_tokens` (its arguments may be incomplete even if they parse).
    """
    errors: dict[str, str] = {}
    calls = response.message.tool_calls
    for i, call in enumerate(calls):
        err = arguments_error(call.raw_arguments)
        if err is None and response.finish_reason == "length" and i == len(calls) - 1:
            err = "reply was cut off at max_tokens; arguments may be incomplete"
        if err is not None:
            errors[call.id] = err
    return errors


def _json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array found in `text`, in order."""
    values: list[Any] = []
    i, end = 0, min(len(text), _MAX_SCAN_CHARS)
    while i < end:
        if text[i] in "{[":
            try:
                value, stop = _DECODER.raw_decode(text, i)
            except json.JSONDecodeError:
                i += 1
                continue
            values.append(value)
            i = stop
        else:
            i += 1
    return values


def _as_call(obj: Any) -> tuple[str, Any] | None:
    """(`name`, arguments) when `obj` looks like a tool call written as JSON."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        return _as_call(obj["function"])
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    args = next((obj[k] for k in _ARG_KEYS if k in obj), {})
    return None if name is None else (name, args)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [item for v in value for item in _flatten(v)]
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        return _flatten(value["tool_calls"])
    return [value]


def recover_calls(content: str, tool_names: Collection[str]) -> list[ToolCall]:
    """Tool calls that a model wrote as JSON text in its content (common with `auto`).

    Looks inside `<tool_call>` tags, code fences, or the bare text, and keeps only calls
    to offered tools. Recovered calls get deterministic ids and `recovered=True`.
    """
    if not content or "{" not in content:
        return []
    sections = _TAGGED.findall(content) or _FENCED.findall(content) or [content]
    digest = hashlib.sha256(content.encode()).hexdigest()[:10]
    calls: list[ToolCall] = []
    for section in sections:
        for value in _json_values(section):
            for obj in _flatten(value):
                found = _as_call(obj)
                if found is None or found[0] not in tool_names:
                    continue
                name, args = found
                raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                try:
                    parsed = parse_arguments(raw)
                except ArgumentsError:
                    parsed = {}
                calls.append(
                    ToolCall(
                        id=f"call_rec_{digest}_{len(calls)}",
                        name=name,
                        arguments=parsed,
                        raw_arguments=raw,
                        recovered=True,
                    )
                )
    return calls


def recover_forced_call(content: str, name: str) -> list[ToolCall]:
    """The call to a forced tool `name` written as text: a `<tool_call>` to it, or, as
    small models often do when told which tool to call, the bare arguments object."""
    calls = recover_calls(content, {name})
    if calls or not content or "{" not in content:
        return calls
    section = (_TAGGED.findall(content) or _FENCED.findall(content) or [content])[0]
    objects = [v for v in _json_values(section) if isinstance(v, dict)]
    if not objects:
        return []
    raw = json.dumps(objects[0], ensure_ascii=False)
    digest = hashlib.sha256(content.encode()).hexdigest()[:10]
    return [
        ToolCall(
            id=f"call_rec_{digest}_0",
            name=name,
            arguments=objects[0],
            raw_arguments=raw,
            recovered=True,
        )
    ]
