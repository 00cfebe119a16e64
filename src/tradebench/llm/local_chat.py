"""A tool-aware llama.cpp chat handler for the bundled models, and the server that uses it.

`python -m tradebench.llm.local_chat [llama_cpp.server options] [--base_format NAME]
[--fold_system]` registers the `tradebench-tools` chat handler and runs llama-cpp-python's
OpenAI-compatible server with it. The handler wraps the model's own chat template (the
GGUF's, or a named llama.cpp format) and carries what that template drops:

- the tool catalogue and the calling convention go into the system text, earlier tool
  calls into the assistant's text and tool results into user turns (`text_tools`);
- a forced tool (`tool_choice` naming one) is generated under a grammar built from the
  tool's JSON Schema and returned as a proper tool call;
- with `auto`/`required`, calls the model writes as `<tool_call>` text are returned as
  tool calls (ids derived from the text, so a replay is stable);
- `--fold_system` folds the system text into the first user turn, for templates without a
  system role (llama.cpp's `gemma` drops it).

Needs the `local-llm` extra (llama-cpp-python); nothing else in tradebench imports this.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from tradebench.llm.parsing import recover_calls
from tradebench.llm.text_tools import forced_tool, plain_messages

HANDLER = "tradebench-tools"
ANSWER_PREFIX = "message:"
"""What a reply under `auto` starts with when it calls no tool (as llama.cpp's own
function-calling format asks): calling and answering are then two explicit choices."""


def _openai_call(call_id: str, name: str, raw_arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": raw_arguments},
    }


def _with_calls(result: dict[str, Any], calls: list[dict[str, Any]], text: str) -> dict[str, Any]:
    """The completion `result` with its message carrying `calls` (finish: tool_calls)."""
    choice = dict(result["choices"][0])
    choice["message"] = {"role": "assistant", "content": text or None, "tool_calls": calls}
    choice["finish_reason"] = "tool_calls"
    return {**result, "choices": [choice]}


UNIT_MARK = "__tradebench_unit_number__"
UNIT_RULE = 'unit-number ::= "0" ("." [0-9] [0-9]? [0-9]? [0-9]?)? | "1" ("." "0" "0"? "0"? "0"?)?'
"""A JSON number from 0 to 1 with up to four decimals: llama.cpp's schema converter ignores
`minimum`/`maximum` on numbers, so weights and confidences in [0, 1] get this rule."""


def _mark_unit_numbers(node: Any) -> Any:
    """The schema with every number bounded within [0, 1] replaced by a marker constant."""
    if isinstance(node, dict):
        lo, hi = node.get("minimum"), node.get("maximum")
        if (
            node.get("type") == "number"
            and lo is not None
            and hi is not None
            and lo >= 0
            and hi <= 1
        ):
            return {"const": UNIT_MARK}
        return {k: _mark_unit_numbers(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_mark_unit_numbers(v) for v in node]
    return node


def schema_gbnf(schema: dict[str, Any], prop_order: list[str] | None = None) -> str:
    """GBNF for JSON matching `schema` (llama.cpp's converter), with numbers bounded in
    [0, 1] held to that range (the converter alone lets a model write 5.9 or 1025.98)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    rules = json_schema_to_gbnf(json.dumps(_mark_unit_numbers(schema)), prop_order=prop_order)
    literal = json.dumps(json.dumps(UNIT_MARK))
    if literal not in rules:
        return rules
    return rules.replace(literal, "unit-number") + "\n" + UNIT_RULE + "\n"


def forced_grammar(tool: dict[str, Any]) -> str:
    """GBNF for the arguments of a forced tool."""
    return schema_gbnf(tool["function"].get("parameters") or {"type": "object"})


def auto_grammar(tools: list[dict[str, Any]], allow_answer: bool = True) -> str:
    """GBNF for a reply under `tool_choice="auto"`: one or more `<tool_call>` lines, each a
    call to an offered tool with arguments of its schema, or (`allow_answer`; not under
    `required`) an answer that starts with `message:`. The model still decides which; the
    grammar only keeps a call well formed."""
    alternatives = [
        {
            "type": "object",
            "properties": {
                "name": {"const": t["function"]["name"]},
                "arguments": t["function"].get("parameters") or {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    rules = schema_gbnf({"oneOf": alternatives}, prop_order=["name", "arguments"])
    rules = rules.replace("root ::=", "call-json ::=", 1)
    return (
        ("root ::= call+ | answer\n" if allow_answer else "root ::= call+\n")
        + 'call ::= "<tool_call>" call-json "</tool_call>" "\\n"?\n'
        + f'answer ::= "{ANSWER_PREFIX}" [^<]*\n'
        + rules
    )


def served_turns(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    tool_choice: Any,
    *,
    fold_system: bool = False,
    stream: bool = False,
) -> list[dict[str, Any]]:
    """The plain turns the model's template renders for one request.

    The system text (the prompt, then the catalogue of the tools not forced) is the same
    for a research call under `auto` and the forced submission after it, which adds the
    submit tool: the forced tool is described in the closing user turn that forces it
    (`text_tools.forced_turn`), and stays there for a retry. The two share their prompt up
    to the new turns, so llama.cpp reuses the evaluated prefix instead of reading the
    whole conversation again. What this reply may do is said in that closing turn and
    enforced by the grammar.
    """
    offered = [] if tool_choice == "none" else list(tools or [])
    prefix = ANSWER_PREFIX if offered and not stream else ""
    return plain_messages(
        messages, offered, tool_choice or "auto", fold_system=fold_system, answer_prefix=prefix
    )


def make_handler(base_format: str | None = None, fold_system: bool = False) -> Callable[..., Any]:
    """A llama-cpp chat completion handler that carries tools through a plain template.

    Args:
        base_format: llama.cpp chat format that renders the turns (None: the GGUF's own
            template, else `chatml`).
        fold_system: The base format has no system role.
    """
    from llama_cpp import llama_chat_format

    def base_handler(llama: Any) -> Callable[..., Any]:
        if base_format is not None:
            return llama_chat_format.get_chat_completion_handler(base_format)
        own = getattr(llama, "_chat_handlers", {}).get("chat_template.default")
        return own or llama_chat_format.get_chat_completion_handler("chatml")

    def handler(
        *,
        llama: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        stream: bool = False,
        **kwargs: Any,
    ) -> Any:
        base = base_handler(llama)
        offered = [] if tool_choice == "none" else list(tools or [])
        choice = tool_choice or "auto"
        name = forced_tool(choice) if offered else None
        may_answer = choice != "required"
        plain = served_turns(messages, tools, tool_choice, fold_system=fold_system, stream=stream)
        tool = next((t for t in offered if t["function"]["name"] == name), None)
        if tool is not None and not stream:
            # The arguments are generated under the tool's grammar and returned as its call;
            # the template never sees the tools (they are in the system text).
            from llama_cpp.llama_grammar import LlamaGrammar

            grammar = LlamaGrammar.from_string(forced_grammar(tool), verbose=False)
            result = base(llama=llama, messages=plain, **{**kwargs, "grammar": grammar})
            raw = (result["choices"][0]["message"].get("content") or "").strip()
            digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
            return _with_calls(result, [_openai_call(f"call_{digest}", name, raw)], "")
        if not offered or stream:
            return base(llama=llama, messages=plain, stream=stream, **kwargs)
        from llama_cpp.llama_grammar import LlamaGrammar

        grammar = LlamaGrammar.from_string(auto_grammar(offered, may_answer), verbose=False)
        result = base(llama=llama, messages=plain, **{**kwargs, "grammar": grammar})
        text = result["choices"][0]["message"].get("content") or ""
        found = recover_calls(text, {t["function"]["name"] for t in offered})
        if not found:
            answer = text.removeprefix(ANSWER_PREFIX).lstrip()
            choice0 = {**result["choices"][0]}
            choice0["message"] = {**choice0["message"], "content": answer}
            return {**result, "choices": [choice0]}
        calls = [_openai_call(c.id, c.name, c.raw_arguments) for c in found]
        before = text.split("<tool_call>", 1)[0].strip()
        return _with_calls(result, calls, before)

    return handler


def die_with_parent(parent_pid: int) -> None:
    """End this server when the process that started it ends, even by SIGKILL (Linux:
    `PR_SET_PDEATHSIG`), so an interrupted run leaves no model server behind. The signal is
    SIGKILL: on SIGTERM the web server first finishes the requests in flight, and a long
    prompt on a busy CPU kept an orphaned server computing for many minutes."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:  # the parent was gone before the line above
        sys.exit(0)


def main(argv: list[str] | None = None) -> None:
    """Register the handler and run llama-cpp-python's server (its options pass through);
    `--parent_pid N` ties the server's life to process N's."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--parent_pid" in args:
        i = args.index("--parent_pid")
        die_with_parent(int(args[i + 1]))
        del args[i : i + 2]
    base_format = None
    if "--base_format" in args:
        i = args.index("--base_format")
        base_format = args[i + 1]
        del args[i : i + 2]
    fold_system = "--fold_system" in args
    args = [a for a in args if a != "--fold_system"]
    from llama_cpp import llama_chat_format

    llama_chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        HANDLER, make_handler(base_format, fold_system), overwrite=True
    )
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *args, "--chat_format", HANDLER]
    serve()


if __name__ == "__main__":
    main()
