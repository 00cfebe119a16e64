"""The with-tools solver over plain text, for servers that refuse tool schemas.

Some OpenAI-compatible servers answer a request that carries `tools` with an error (a
model without tool support, a server started without tool parsing), and some drop the
connection instead (llama.cpp's server can close it, or crash, on a grammar it cannot
build from a schema). There the with-tools solver falls back to this protocol
(`TextFallback`): the model writes a program in a fenced ```python block,
it runs in the question's workspace as `run_python` would run it, its result comes back as
the next user message, and a reply without a block is read for its `Answer: X` line
(`parse.parse_letter`). The budgets are the tools' own: at most `max_runs` programs, the
workspace's seconds; when they are spent the model is asked for its answer once.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Literal

from tradebench.benchmarks.mcq.eval.parse import parse_letter
from tradebench.benchmarks.mcq.eval.sandbox_tool import TOOL_NAME, check_lengths, tool_result
from tradebench.benchmarks.mcq.prompt_files import render
from tradebench.errors import ProviderError, ToolError
from tradebench.llm.base import ChatModel
from tradebench.llm.retry import AttemptsExhausted
from tradebench.llm.types import Message, Usage
from tradebench.sandbox.workspace import BudgetExhausted, Workspace

CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
REFUSAL = re.compile(r"HTTP (?:400|404|422|500|501)\b")
ANSWER_NOW = "No more programs can run. Reply with the line `Answer: X` now."

TextFallback = Literal["", "refused", "dropped", "dropped before"]
"""Why a with-tools attempt went over plain text: "" (it did not); `refused` (the first
tools request got an HTTP error naming tools); `dropped` (every attempt of the question's
first tools request lost its connection, before any reply); `dropped before` (an earlier
question's tools request was dropped so: this model gets no tools request again in this
evaluation, so its retries are paid once)."""

__all__ = [
    "CODE_BLOCK",
    "TextFallback",
    "TextOutcome",
    "dropped_tools",
    "refuses_tools",
    "solve_as_text",
]


def refuses_tools(exc: ProviderError) -> bool:
    """Whether a failed request was refused for its tools: an HTTP 400/404/422/500/501
    whose message names tools (`tool`, `function`, `grammar`)."""
    text = str(exc)
    return bool(REFUSAL.search(text)) and any(
        word in text.lower() for word in ("tool", "function", "grammar")
    )


def dropped_tools(exc: ProviderError, replies: int) -> bool:
    """Whether a failed request with tools lost its connection on every attempt
    (`AttemptsExhausted.only_connections`) before the question had any reply (`replies`):
    a drop later in the exchange is the endpoint's failure, not the tools'."""
    return replies == 0 and isinstance(exc, AttemptsExhausted) and exc.only_connections


def last_program(text: str) -> str | None:
    """The last fenced Python block of a reply, None without one."""
    blocks = CODE_BLOCK.findall(text or "")
    return blocks[-1] if blocks else None


class TextOutcome:
    """What the text protocol produced: the letter (None without one), the last reply,
    the messages after the question, usage, latency, model calls and programs run."""

    def __init__(self) -> None:
        """An empty outcome, filled as the exchange runs."""
        self.letter: str | None = None
        self.last_reply = ""
        self.messages: list[Message] = []
        self.usage = Usage()
        self.latency_s = 0.0
        self.model_calls = 0
        self.runs = 0


async def _run(workspace: Workspace, code: str) -> dict[str, Any]:
    """One program in the workspace, as `run_python` runs it; a refused or spent run is an
    `error` the model reads."""
    try:
        check_lengths(TOOL_NAME, {"code": code})
        return tool_result(await asyncio.to_thread(workspace.run, code))
    except (ToolError, BudgetExhausted) as exc:
        return {"error": str(exc)}


async def solve_as_text(
    model: ChatModel,
    system_files: str,
    question: str,
    workspace: Workspace,
    sample_index: int,
    max_runs: int,
) -> TextOutcome:
    """Solve one question over plain text (module docstring)."""
    out = TextOutcome()
    system = render("solver_text_tools", files=system_files, calls=max_runs)
    messages = [Message(role="system", content=system), Message(role="user", content=question)]
    asked_to_answer = False
    while True:
        response = await model.generate(messages, (), "auto", sample_index)
        out.model_calls += 1
        out.usage = out.usage + response.usage
        out.latency_s += response.latency_s
        reply = response.message.content or ""
        out.last_reply = reply
        messages.append(Message(role="assistant", content=reply))
        code = last_program(reply)
        if code is None or asked_to_answer:
            out.letter = parse_letter(reply)
            break
        if out.runs >= max_runs:
            messages.append(Message(role="user", content=ANSWER_NOW))
            asked_to_answer = True
            continue
        result = await _run(workspace, code)
        out.runs += 1
        body = json.dumps(result, ensure_ascii=False)
        messages.append(Message(role="user", content=f"Program result: {body}"))
    out.messages = messages[2:]
    return out
