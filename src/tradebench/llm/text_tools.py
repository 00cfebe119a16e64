"""Tools for chat templates that cannot carry them: the catalogue and the calls as text.

Many small models' chat templates (SmolLM2's among them) render only `role` and
`content`: a request's `tools` vanish, an assistant's earlier tool calls render as an
empty turn and tool results are dropped or mislabelled, so the model never learns it may
call anything and a retry cannot see what was rejected. Some templates (llama.cpp's
`gemma`) have no system role at all.

`plain_messages` rewrites an OpenAI-style conversation so that everything survives such a
template: the tool catalogue and the calling convention go into the system text (a forced
tool is described in the turn that forces it, after the conversation), earlier
calls become `<tool_call>` lines in the assistant's text, tool results become user turns,
and (for templates without a system role) the system text is folded into the first user
turn. Calls written back in that convention are read by `tradebench.llm.parsing`.

Both sides use it: the bundled local server's chat handler (`llm/local_chat.py`) and the
OpenAI-compatible adapter when it finds that an endpoint drops tools.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"


def _tool_function(tool: dict[str, Any]) -> dict[str, Any]:
    """The `function` part of an OpenAI tool entry (or the entry itself)."""
    return tool.get("function", tool) if isinstance(tool, dict) else {}


def forced_tool(tool_choice: Any) -> str | None:
    """The tool name a `tool_choice` forces (`{"type": "function", ...}` or a bare name)."""
    if isinstance(tool_choice, dict):
        return str((tool_choice.get("function") or {}).get("name") or "") or None
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required"):
        return tool_choice
    return None


def catalogue_text(tools: Sequence[dict[str, Any]], answer_prefix: str = "") -> str:
    """The tools and how to call them, as text for the system turn (the same for every
    request of a conversation, so a server's prompt cache keeps the prefix).

    `answer_prefix`: what a reply without a tool call must start with (a server that
    constrains the reply's grammar asks for one, so calling and answering are two
    explicit choices); empty: plain text.
    """
    answer = (
        f"To answer without a tool, start your reply with `{answer_prefix}`."
        if answer_prefix
        else "To answer without a tool, write plain text."
    )
    lines = [
        "## Tools",
        "You can call the tools below. To call one, write a line of exactly this form, "
        "with the arguments as one JSON object:",
        f'{CALL_OPEN}{{"name": "TOOL_NAME", "arguments": {{...}}}}{CALL_CLOSE}',
        "Write nothing after your calls; each result comes back in the next message. " + answer,
        "",
    ]
    lines += [tool_entry(tool) for tool in tools if _tool_function(tool).get("name")]
    first = _tool_function(tools[0]).get("name", "TOOL_NAME") if tools else "TOOL_NAME"
    lines += ["", f'For example, a call to {first} starts: {CALL_OPEN}{{"name": "{first}", ...']
    return "\n".join(lines)


def tool_entry(tool: dict[str, Any]) -> str:
    """One tool's catalogue entry: its name, description and arguments schema."""
    fn = _tool_function(tool)
    schema = json.dumps(fn.get("parameters") or {}, ensure_ascii=False, separators=(",", ":"))
    head = f"- {fn.get('name', '')}: {fn.get('description', '')}"
    return f"{head}\n  arguments (JSON Schema): {schema}"


def forced_turn(tool: dict[str, Any]) -> str:
    """The turn that forces `tool`: the choice, the calling form and the tool's entry."""
    name = str(_tool_function(tool).get("name", ""))
    return "\n".join(
        [
            choice_line(name) + " Write one line of exactly this form, with the arguments "
            "as one JSON object:",
            f'{CALL_OPEN}{{"name": {json.dumps(name)}, "arguments": {{...}}}}{CALL_CLOSE}',
            tool_entry(tool),
        ]
    )


def choice_line(tool_choice: Any) -> str:
    """What this reply must do when `tool_choice` forces a tool (empty for `auto`)."""
    name = forced_tool(tool_choice)
    if name is not None:
        return f"In this reply you must call `{name}` and nothing else."
    if tool_choice == "required":
        return "In this reply you must call at least one tool."
    return ""


def call_text(name: str, arguments: Any) -> str:
    """One tool call in the text convention."""
    if isinstance(arguments, str):
        # Unparseable arguments stay as the model wrote them, so it can see its mistake.
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments) if arguments.strip() else {}
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f'{CALL_OPEN}{{"name": {json.dumps(name)}, "arguments": {args}}}{CALL_CLOSE}'


def _result_text(message: dict[str, Any], names: dict[str, str]) -> str:
    name = message.get("name") or names.get(str(message.get("tool_call_id") or ""), "tool")
    return f"Result of {name}:\n{_content(message)}"


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def plain_messages(
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] = (),
    tool_choice: Any = "auto",
    *,
    fold_system: bool = False,
    answer_prefix: str = "",
) -> list[dict[str, Any]]:
    """The conversation with only `system`/`user`/`assistant` turns of plain text.

    Args:
        messages: OpenAI chat-completions messages (tool calls and tool results allowed).
        tools: OpenAI tool entries; their catalogue is appended to the system text (a
            system turn is made when there is none). Empty: no catalogue.
        tool_choice: `auto`, `none`, `required` or a forced tool; a forced choice is said
            in a closing user turn, and a forced tool is described in that turn instead
            of the catalogue (`forced_turn`).
        fold_system: The template has no system role: the system text opens the first
            user turn instead.
        answer_prefix: See `catalogue_text`.

    Adjacent turns of one role are merged, so templates that insist on alternating
    user/assistant turns accept the result.
    """
    offered = list(tools) if tool_choice != "none" else []
    forced_name = forced_tool(tool_choice)
    forced = next((t for t in offered if _tool_function(t).get("name") == forced_name), None)
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    anchor: int | None = None  # where the forced tool was first called
    for message in messages:
        role = message.get("role")
        if role == "system":
            system_parts.append(_content(message))
            continue
        if role == "assistant":
            calls = message.get("tool_calls") or []
            parts = [_content(message)] if _content(message).strip() else []
            for call in calls:
                fn = call.get("function") or {}
                names[str(call.get("id") or "")] = str(fn.get("name", ""))
                parts.append(call_text(str(fn.get("name", "")), fn.get("arguments") or {}))
                if forced is not None and anchor is None and fn.get("name") == forced_name:
                    anchor = len(turns)
            turns.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            turns.append({"role": "user", "content": _result_text(message, names)})
        else:
            turns.append({"role": "user", "content": _content(message)})
    listed = [t for t in offered if t is not forced]
    if listed:
        system_parts.append(catalogue_text(listed, answer_prefix))
    # Every choice is said after the conversation, so its prefix stays the same. A forced
    # tool is described there too, not in the catalogue: research without the submit tool
    # and a forced submission after it then share their system text. Once the tool has been
    # called, its description stays where the first forced request had it (before that
    # call), so a retry reads only its new turns.
    if forced is not None:
        forcing = {"role": "user", "content": forced_turn(forced)}
        if anchor is None:
            turns.append(forcing)
        else:
            turns.insert(anchor, forcing)
            turns.append({"role": "user", "content": choice_line(tool_choice)})
    elif offered and choice_line(tool_choice):
        turns.append({"role": "user", "content": choice_line(tool_choice)})
    system = "\n\n".join(p for p in system_parts if p.strip())
    merged: list[dict[str, Any]] = []
    for turn in turns:
        if merged and merged[-1]["role"] == turn["role"]:
            merged[-1] = {**merged[-1], "content": merged[-1]["content"] + "\n\n" + turn["content"]}
        else:
            merged.append(dict(turn))
    if not system:
        return merged
    if not fold_system:
        return [{"role": "system", "content": system}, *merged]
    if merged and merged[0]["role"] == "user":
        merged[0] = {**merged[0], "content": system + "\n\n" + merged[0]["content"]}
        return merged
    return [{"role": "user", "content": system}, *merged]
