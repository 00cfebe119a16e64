"""MCQ solvers: one question, one model, one sample -> a `SolveResult`. Registered by mode.

- `no_tools`: one model call with no tools offered. The prompt asks for a single letter
  (`prompt="letter"`, the paper's protocol) or for reasoning ending in `Answer: X`
  (`prompt="reasoning"`). A reply carrying a tool call is refused (scored wrong, counted,
  and excluded from the summary's accuracy over answered attempts); otherwise the letter
  is read strictly (`eval.parse.parse_letter`), and an unreadable reply is scored wrong and
  counted.
- `with_tools`: the shared tool loop (`agents.llm.run_tool_loop`) with a `run_python` tool
  whose calls run confined in the question's own workspace (files persist across calls;
  removed after the question), `pip_install` from a local wheel directory when one is given,
  a budget of calls and seconds per question, then a forced `answer` submit tool whose only
  argument is a letter enum. Where the server refuses the tool schemas, or drops the
  connection on every attempt of the first request with tools, the question is answered
  over plain text instead (`eval.text_tools`), once, and the row says why
  (`SolveResult.text_fallback`); after a drop, that model gets no tools request again.

Evaluation and mining (both solver stages) use these same solvers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from tradebench.agents.tool_loop import LoopConfig, run_tool_loop
from tradebench.agents.tools import SubmitTool
from tradebench.benchmarks.mcq.eval.parse import parse_letter
from tradebench.benchmarks.mcq.eval.sandbox_tool import limits_for, workspace_tools
from tradebench.benchmarks.mcq.eval.text_tools import (
    TextFallback,
    TextOutcome,
    dropped_tools,
    refuses_tools,
    solve_as_text,
)
from tradebench.benchmarks.mcq.prompt_files import render
from tradebench.errors import ConfigError, ProviderError
from tradebench.llm.base import ChatModel
from tradebench.llm.observed import ObservedModel
from tradebench.llm.redact import Redactor
from tradebench.llm.types import ChatResponse, Message, Usage
from tradebench.registry import Registry
from tradebench.sandbox import SandboxLimits
from tradebench.sandbox.workspace import Budget, Workspace

SUBMIT_NAME = "answer"
SUBMIT_PROMPT = "Stop using tools now. Call `{submit}` with the letter of the option you choose."
UNPARSEABLE = "no answer letter in an accepted form (a final `Answer: X` line or a lone letter)"


@dataclass(frozen=True)
class Posed:
    """A question as a solver receives it: text, options A-D, the key, files for tools."""

    id: str
    question: str
    options: Mapping[str, str]
    answer: str
    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))


class SolveResult(BaseModel):
    """What one solver attempt produced (one row of results, without the question fields)."""

    model_config = ConfigDict(frozen=True)

    letter: str | None
    """The letter read or submitted; None when none was."""
    parsed: bool
    """A letter was obtained (no tools: read in an accepted form; tools: submission accepted)."""
    refused_tool_call: bool
    """No tools: the reply carried a tool call and was refused."""
    parse_error: str | None
    """Why no letter was obtained, None when one was."""
    raw_reply: str
    """The model's final reply text (no tools) or its last `answer` arguments (tools)."""
    usage: Usage
    """Tokens over every model call of the attempt."""
    latency_s: float
    """Sum of the model calls' recorded latencies."""
    model_calls: int
    """Model calls made."""
    tool_calls: int
    """`run_python` calls made (tools mode)."""
    transcript: str
    """JSON of the messages after the question (assistant and tool turns), redacted."""
    tool_choice_fallbacks: int = 0
    """Steps down the forced-call ladder: `tool_choice` forms the endpoint refused or
    ignored (`llm.openai_provider`)."""
    text_fallback: TextFallback = ""
    """Tools: why the attempt went over plain text ("" when it did not; `TextFallback`)."""


class Solver(Protocol):
    """Answers one posed question with one model; `sample_index` keys the cache."""

    async def __call__(self, model: ChatModel, posed: Posed, sample_index: int) -> SolveResult:
        """Solve `posed` once."""
        ...


SOLVERS: Registry[Solver] = Registry("mcq solver")
Mode = Literal["no_tools", "with_tools"]
NoToolsPrompt = Literal["letter", "reasoning"]
NO_TOOLS_PROMPTS: dict[str, str] = {
    "letter": "solver_no_tools",
    "reasoning": "solver_no_tools_reasoning",
}
"""No-tools prompt variant -> prompt file: a single letter (default), or reasoning first."""


def user_message(posed: Posed) -> str:
    """The question followed by its options, one `X) text` line each."""
    options = "\n".join(f"{k}) {posed.options[k]}" for k in sorted(posed.options))
    return render("question", question=posed.question, options=options)


def _transcript(messages: list[Message]) -> str:
    redactor = Redactor.from_env()
    dumped = [
        m.model_copy(update={"content": redactor.text(m.content)}).model_dump(mode="json")
        for m in messages
    ]
    return json.dumps(dumped, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class NoToolsSolver:
    """One call, no tools offered, the letter read strictly from the text."""

    prompt: NoToolsPrompt = "letter"

    async def __call__(self, model: ChatModel, posed: Posed, sample_index: int) -> SolveResult:
        """See `Solver`."""
        messages = [
            Message(role="system", content=render(NO_TOOLS_PROMPTS[self.prompt])),
            Message(role="user", content=user_message(posed)),
        ]
        response = await model.generate(messages, (), "auto", sample_index)
        reply = response.message
        refused = bool(reply.tool_calls)
        letter = None if refused or response.parse_error else parse_letter(reply.content)
        if refused:
            error: str | None = "the reply carried a tool call; none was offered"
        else:
            error = response.parse_error or (UNPARSEABLE if letter is None else None)
        raw = reply.content
        if refused:
            calls = [{"name": c.name, "arguments": c.raw_arguments} for c in reply.tool_calls]
            raw = json.dumps({"content": reply.content, "tool_calls": calls}, ensure_ascii=False)
        return SolveResult(
            letter=letter,
            parsed=letter is not None,
            refused_tool_call=refused,
            parse_error=error,
            raw_reply=Redactor.from_env().text(raw),
            usage=response.usage,
            latency_s=response.latency_s,
            model_calls=1,
            tool_calls=0,
            transcript=_transcript([reply]),
        )


class AnswerChoice(BaseModel):
    """The `answer` submission: one letter."""

    letter: Literal["A", "B", "C", "D"]


ANSWER_TOOL = SubmitTool.from_model(
    SUBMIT_NAME, "Submit your final answer: the letter of the option you choose.", AnswerChoice
)


def _files_text(files: Mapping[str, bytes]) -> str:
    return ", ".join(sorted(files)) if files else "no files"


PACKAGES_NOTE = (
    "Other packages can be installed with `pip_install` from a local wheel directory (no "
    "index); installed packages import in your later calls."
)
QUESTION_CALLS, QUESTION_SECONDS = 40, 600.0
"""Default per-question budget: tool calls, and seconds of sandbox time over all of them."""


@dataclass(frozen=True)
class WithToolsSolver:
    """The tool loop in one workspace per question, then a forced `answer`."""

    max_tool_calls: int = QUESTION_CALLS
    max_submit_retries: int = 2
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    question_seconds: float = QUESTION_SECONDS
    wheels: str | None = None
    dropped: set[str] = field(default_factory=set, compare=False, hash=False, repr=False)
    """Labels of the models whose first tools request was dropped on every attempt: they
    get the text protocol from then on (`TextFallback`)."""

    async def __call__(self, model: ChatModel, posed: Posed, sample_index: int) -> SolveResult:
        """See `Solver`."""
        config = LoopConfig(
            max_tool_calls=self.max_tool_calls,
            max_submit_retries=self.max_submit_retries,
            submit_prompt=SUBMIT_PROMPT,
            sample_index=sample_index,
        )
        budget = Budget(calls=self.max_tool_calls, seconds=self.question_seconds)
        system = render(
            "solver_with_tools",
            files=_files_text(posed.files),
            packages=PACKAGES_NOTE if self.wheels else "",
        )
        with Workspace(posed.files, self.limits, budget, self.wheels) as workspace:
            label = model.config.label
            if label in self.dropped:
                why: TextFallback = "dropped before"
            else:
                replies: list[ChatResponse] = []
                try:
                    result = await run_tool_loop(
                        ObservedModel(model, replies.append),
                        system=system,
                        user=user_message(posed),
                        tools=workspace_tools(workspace, packages=self.wheels is not None),
                        submit=ANSWER_TOOL,
                        config=config,
                    )
                    why = ""
                except ProviderError as exc:
                    if refuses_tools(exc):
                        why, said = "refused", "refused tool schemas"
                    elif dropped_tools(exc, len(replies)):
                        why, said = "dropped", "dropped every attempt of a request with tools"
                        self.dropped.add(label)
                    else:
                        raise
                    logging.getLogger("tradebench.mcq").warning(
                        "%s %s (%s); question %s answered over plain text%s",
                        label,
                        said,
                        exc,
                        posed.id,
                        ", and so are its later questions" if why == "dropped" else "",
                    )
            if why:
                text = await solve_as_text(
                    model,
                    _files_text(posed.files),
                    user_message(posed),
                    workspace,
                    sample_index,
                    self.max_tool_calls,
                )
                return _text_result(text, why)
        letter = result.action.letter if result.action is not None else None
        answers = [c for c in result.tool_calls if c.name == SUBMIT_NAME]
        last_text = next(
            (m.content for m in reversed(result.messages) if m.role == "assistant"), ""
        )
        return SolveResult(
            letter=letter,
            parsed=letter is not None,
            refused_tool_call=False,
            parse_error=None if letter is not None else "no valid `answer` submission",
            raw_reply=answers[-1].raw_arguments if answers else last_text,
            usage=result.usage,
            latency_s=result.latency_s,
            model_calls=len(result.model_calls),
            tool_calls=result.research_calls,
            transcript=_transcript(result.messages[2:]),
            tool_choice_fallbacks=result.faults.tool_choice_fallbacks,
        )


def _text_result(text: TextOutcome, why: TextFallback) -> SolveResult:
    """A text-protocol exchange as a solver result (`tool_calls`: programs run), with the
    reason it went over text."""
    return SolveResult(
        letter=text.letter,
        parsed=text.letter is not None,
        refused_tool_call=False,
        parse_error=None if text.letter is not None else UNPARSEABLE,
        raw_reply=Redactor.from_env().text(text.last_reply),
        usage=text.usage,
        latency_s=text.latency_s,
        model_calls=text.model_calls,
        tool_calls=text.runs,
        transcript=_transcript(text.messages),
        text_fallback=why,
    )


@SOLVERS.register("no_tools")
def no_tools_solver(prompt: NoToolsPrompt = "letter") -> Solver:
    """The no-tools solver: `letter` asks for one letter only, `reasoning` lets it think."""
    if prompt not in NO_TOOLS_PROMPTS:
        raise ConfigError(
            f"no-tools prompt must be one of {list(NO_TOOLS_PROMPTS)}, got {prompt!r}"
        )
    return NoToolsSolver(prompt)


@SOLVERS.register("with_tools")
def with_tools_solver(
    max_tool_calls: int = QUESTION_CALLS,
    timeout_s: float = 120.0,
    max_submit_retries: int = 2,
    allow_weak_sandbox: bool = False,
    question_seconds: float = QUESTION_SECONDS,
    wheels: str | None = None,
) -> Solver:
    """The tools solver: per-question budget (calls, seconds), per-call limit, retries, and
    an optional wheel directory for offline package installs."""
    limits = limits_for(timeout_s, allow_weak_sandbox)
    return WithToolsSolver(max_tool_calls, max_submit_retries, limits, question_seconds, wheels)
