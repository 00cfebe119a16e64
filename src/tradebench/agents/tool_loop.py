"""The LLM tool loop every benchmark shares: research, forced submission, retries, fallback.

1. Research: the model sees the read-only tools (and the submit tool) with
   `tool_choice="auto"` and calls them as it likes, up to `max_tool_calls` calls. Bad calls
   (malformed JSON, unknown tool, schema violations, `ToolError`) get a structured error as
   their tool result; the loop goes on. A reply without tool calls ends research;
   unreadable replies (garbage, empty) get feedback, up to `max_parse_failures`.
2. Submission: the submit tool is forced through `tool_choice`. An invalid submission
   (schema or constraint) gets structured feedback as its tool result and is retried, up
   to `max_submit_retries` times.
3. Fallback: if no attempt is accepted, the action is None (do nothing).

Feedback names what went wrong from structure (the kind, the field, the rule, what is
allowed) and never quotes what the model wrote: behind a mask, an echo is an oracle.

Where a run can stop: any model call may raise `BudgetExceeded` (token or cost cap). The
loop re-raises it as `LoopBudgetExceeded`, whose `.result` holds the partial record;
catch `BudgetExceeded` at step boundaries, save the step records and stop. Every reply
already received is in the cache, so rerunning with a larger budget replays them for free.
`ProviderError` (endpoint down after all retries) and `CacheMiss` (replay) propagate as is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from tradebench.agents.loop_types import (
    CallErrorKind,
    LoopBudgetExceeded,
    LoopConfig,
    LoopResult,
    ModelCallRecord,
    Phase,
    StopReason,
    ToolCallRecord,
)
from tradebench.agents.tools import ArgumentError, SubmitTool, Tool
from tradebench.errors import BudgetExceeded, ConfigError, ToolError
from tradebench.llm.base import ChatModel
from tradebench.llm.parsing import call_errors
from tradebench.llm.redact import Redactor
from tradebench.llm.types import (
    CallFaults,
    ChatResponse,
    Message,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)

__all__ = [
    "LoopBudgetExceeded",
    "LoopConfig",
    "LoopResult",
    "ModelCallRecord",
    "SubmitTool",
    "Tool",
    "ToolCallRecord",
    "run_tool_loop",
]


UNREADABLE = "the reply could not be read as text or as a tool call"
"""What the model is told about an unreadable reply (never the reply itself)."""


def to_json(value: Any) -> str:
    """A tool result as the text the model sees (strings pass through unchanged)."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _error(kind: str, message: str, **extra: Any) -> str:
    return to_json({"error": {"type": kind, "message": message, **extra}})


class _Outcome(BaseModel):
    """Result of handling one tool call: the tool-message text and validity."""

    content: str
    valid: bool
    kind: CallErrorKind | None = None
    error: str | None = None


def _bad(kind: CallErrorKind, message: str, **extra: Any) -> _Outcome:
    return _Outcome(content=_error(kind, message, **extra), valid=False, kind=kind, error=message)


class _ToolLoop:
    """Mutable state of one loop run; `result()` freezes it into a `LoopResult`."""

    def __init__(
        self,
        model: ChatModel,
        messages: list[Message],
        tools: Sequence[Tool],
        submit: SubmitTool,
        config: LoopConfig,
    ) -> None:
        names = [t.name for t in tools]
        if len(set(names)) != len(names) or submit.name in names:
            raise ConfigError(f"tool names must be unique (tools {names}, submit {submit.name})")
        self.model, self.submit, self.config = model, submit, config
        self.tools = {t.name: t for t in tools}
        self.messages = messages
        specs = [t.spec for t in tools]
        self.research_specs: list[ToolSpec] = (
            [*specs, submit.spec] if config.offer_submit_in_research else specs
        )
        self.submit_specs: list[ToolSpec] = [*specs, submit.spec]
        self.model_calls: list[ModelCallRecord] = []
        self.tool_calls: list[ToolCallRecord] = []
        self.research_calls = 0
        self.attempts = 0
        self.action: Any = None
        self.submitted = False

    @property
    def attempts_left(self) -> int:
        """Submission attempts still allowed."""
        return max(1 + self.config.max_submit_retries - self.attempts, 0)

    async def ask(self, tools: list[ToolSpec], choice: ToolChoice, phase: Phase) -> ChatResponse:
        """One model call, recorded."""
        response = await self.model.generate(
            list(self.messages), tools, choice, self.config.sample_index
        )
        calls = response.message.tool_calls
        self.model_calls.append(
            ModelCallRecord(
                index=len(self.model_calls),
                phase=phase,
                tool_choice=choice,
                finish_reason=response.finish_reason,
                usage=response.usage,
                latency_s=response.latency_s,
                parse_error=response.parse_error,
                tool_calls=len(calls),
                recovered_calls=sum(c.recovered for c in calls),
                faults=response.faults,
                tool_choice_rung=response.tool_choice_rung,
                reasoning=response.reasoning,
            )
        )
        return response

    async def research(self) -> None:
        """Let the model call tools until it stops, hits the cap, or submits."""
        unreadable = 0
        while not self.attempts and self.research_calls < self.config.max_tool_calls:
            if not self.research_specs:
                return
            response = await self.ask(self.research_specs, "auto", "research")
            if response.message.tool_calls:
                await self.run_calls(response, "research")
                continue
            if response.parse_error is None:
                self.messages.append(response.message)
                return
            unreadable += 1
            self.complain(response, "unreadable_reply", "Call one of the tools, or stop.")
            if unreadable >= self.config.max_parse_failures:
                return

    async def submission(self) -> None:
        """Force the submit tool until an attempt is accepted or attempts run out."""
        if not self.attempts:
            prompt = self.config.submit_prompt.format(submit=self.submit.name)
            self.messages.append(Message(role="user", content=prompt))
        while not self.submitted and self.attempts_left:
            response = await self.ask(self.submit_specs, self.submit.name, "submit")
            if any(c.name == self.submit.name for c in response.message.tool_calls):
                await self.run_calls(response, "submit")
                continue
            self.attempts += 1
            if response.message.tool_calls:
                await self.run_calls(response, "submit")
            else:
                hint = f"Call `{self.submit.name}` now."
                self.complain(response, "no_submission", hint, attempts_left=self.attempts_left)

    def complain(self, response: ChatResponse, kind: str, hint: str, **extra: Any) -> None:
        """Keep any text the model wrote, then tell it what went wrong (as a user turn), in
        fixed words: the reader's own account (`parse_error`, which may quote the reply) stays
        in the model-call record."""
        if response.message.content:
            self.messages.append(Message(role="assistant", content=response.message.content))
        reason = UNREADABLE if response.parse_error else "the reply contained no tool call"
        self.messages.append(Message(role="user", content=_error(kind, reason, hint=hint, **extra)))

    async def run_calls(self, response: ChatResponse, phase: Phase) -> None:
        """Append the assistant turn, then answer each of its tool calls in order."""
        self.messages.append(response.message)
        problems = call_errors(response)
        for call in response.message.tool_calls:
            outcome = await self.handle(call, problems.get(call.id), phase)
            self.tool_calls.append(
                ToolCallRecord(
                    model_call=len(self.model_calls) - 1,
                    phase=phase,
                    id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    raw_arguments=call.raw_arguments,
                    recovered=call.recovered,
                    valid=outcome.valid,
                    error_kind=outcome.kind,
                    error=outcome.error,
                )
            )
            self.messages.append(
                Message(role="tool", content=outcome.content, tool_call_id=call.id, name=call.name)
            )

    async def handle(self, call: ToolCall, malformed: str | None, phase: Phase) -> _Outcome:
        """Run one tool call (or a submission) and say how it went."""
        if self.submitted:
            return _bad("after_submission", "a submission was already accepted; call ignored")
        if call.name == self.submit.name:
            return self.try_submit(call, malformed)
        if phase == "submit":
            return _bad("wrong_tool", f"only `{self.submit.name}` may be called now")
        tool = self.tools.get(call.name)
        if tool is None:
            known = sorted([*self.tools, self.submit.name])
            return _bad("unknown_tool", "no tool has that name", available=known)
        if self.research_calls >= self.config.max_tool_calls:
            limit = self.config.max_tool_calls
            return _bad("over_limit", f"the research limit of {limit} tool calls is reached")
        self.research_calls += 1
        if malformed is not None:
            return _bad("malformed_json", malformed)
        try:
            result = await tool.run(call.arguments)
        except ArgumentError as exc:
            return _bad("invalid_arguments", str(exc), issues=exc.issues)
        except ToolError as exc:
            return _bad("tool_error", str(exc))
        return _Outcome(content=to_json(result), valid=True)

    def try_submit(self, call: ToolCall, malformed: str | None) -> _Outcome:
        """Validate a submission; accept it, or explain what to fix."""
        self.attempts += 1
        if self.attempts > 1 + self.config.max_submit_retries:
            return _bad("rejected", "no submission attempts left")
        try:
            if malformed is not None:
                raise ArgumentError(malformed, [{"path": "(root)", "message": malformed}])
            action = self.submit.accept(call.arguments)
        except ToolError as exc:
            issues = exc.issues if isinstance(exc, ArgumentError) else []
            return _bad("rejected", str(exc), issues=issues, attempts_left=self.attempts_left)
        self.action, self.submitted = action, True
        return _Outcome(content=to_json({"ok": True, "message": "submission accepted"}), valid=True)

    def result(self, stop: StopReason) -> LoopResult:
        """Freeze the state into a `LoopResult` (messages redacted)."""
        redactor = Redactor.from_env()
        messages = [
            m.model_copy(update={"content": redactor.text(m.content)}) for m in self.messages
        ]
        usage = sum((c.usage for c in self.model_calls), Usage())
        return LoopResult(
            messages=messages,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            research_calls=self.research_calls,
            submission_attempts=self.attempts,
            retries=max(self.attempts - 1, 0),
            parse_failures=sum(c.parse_error is not None for c in self.model_calls),
            recovered_calls=sum(c.recovered_calls for c in self.model_calls),
            usage=usage,
            latency_s=sum(c.latency_s for c in self.model_calls),
            faults=CallFaults.total(c.faults for c in self.model_calls),
            action=self.action,
            fallback=stop == "fallback",
            research_cap_hit=bool(self.tools) and self.research_calls >= self.config.max_tool_calls,
            stop_reason=stop,
        )


async def run_tool_loop(
    model: ChatModel,
    *,
    system: str,
    user: str,
    tools: Sequence[Tool],
    submit: SubmitTool,
    config: LoopConfig | None = None,
) -> LoopResult:
    """Run research, forced submission with retries, and fallback; record everything.

    Args:
        model: Any `ChatModel` (usually from `get_model`, with cache and budget).
        system: System prompt.
        user: The observation / task for this step.
        tools: Read-only tools for the research phase (plain; wrap them to mask).
        submit: The submission tool and its validator.
        config: Loop limits; defaults to `LoopConfig()`.

    Returns:
        The loop record; `action` is None when it fell back to no action.

    Raises:
        LoopBudgetExceeded: A budget cap stopped the loop (`.result` is the partial record).
        ProviderError: The endpoint failed after all retries.
        CacheMiss: Replay mode met a request that was never recorded.
    """
    messages = [Message(role="system", content=system), Message(role="user", content=user)]
    loop = _ToolLoop(model, messages, tools, submit, config or LoopConfig())
    try:
        await loop.research()
        if not loop.submitted:
            await loop.submission()
    except BudgetExceeded as exc:
        raise LoopBudgetExceeded(str(exc), loop.result("budget")) from exc
    return loop.result("submitted" if loop.submitted else "fallback")
