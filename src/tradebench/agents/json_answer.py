"""Answer as one pure JSON object in the reply text: no tools offered, no tool_choice.

The other answer form of the shared loop (`tool_loop` forces a submit tool). The model gets
the system prompt and the observation with no tools; its reply must be a single JSON
object (surrounding whitespace and one markdown code fence are tolerated, nothing else).
The object is validated by the same `SubmitTool.accept` as a forced submission. An
unreadable reply or a refused object gets structured feedback as a user turn and is retried,
up to `max_submit_retries` times; if no attempt is accepted the action is None (no trade).

Records match the tool loop's: each model call is a `submit`-phase `ModelCallRecord`
(`tool_choice="none"`) whose `parse_error` says why its text is not one JSON object, so
`parse_failures` counts unreadable answers as the forced form counts unreadable tool
arguments; each readable object is a `submit`-phase `ToolCallRecord` named after the
submit tool.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tradebench.agents.loop_types import (
    LoopBudgetExceeded,
    LoopConfig,
    LoopResult,
    ModelCallRecord,
    ToolCallRecord,
)
from tradebench.agents.tool_loop import SubmitTool, to_json
from tradebench.agents.tools import ArgumentError
from tradebench.errors import BudgetExceeded, ToolError
from tradebench.llm.base import ChatModel
from tradebench.llm.redact import Redactor
from tradebench.llm.types import CallFaults, ChatResponse, Message, Usage

_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL)
_DECODER = json.JSONDecoder(strict=False)
RETRY_HINT = "Reply with one JSON object and nothing else."


def read_json_answer(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None) when `text` is one JSON object (whitespace and one code fence
    around it allowed), else (None, why not)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        return None, "the reply is empty"
    try:
        value, end = _DECODER.raw_decode(body)
    except json.JSONDecodeError as exc:
        return None, f"the reply is not valid JSON ({exc.msg} at char {exc.pos})"
    if body[end:].strip():
        return None, "the reply holds text after the JSON object"
    if not isinstance(value, dict):
        return None, f"the reply must be a JSON object, got {type(value).__name__}"
    return value, None


class _JsonAnswer:
    """State of one answer loop; `result()` freezes it into a `LoopResult`."""

    def __init__(
        self, model: ChatModel, messages: list[Message], submit: SubmitTool, config: LoopConfig
    ) -> None:
        self.model, self.messages, self.submit, self.config = model, messages, submit, config
        self.model_calls: list[ModelCallRecord] = []
        self.tool_calls: list[ToolCallRecord] = []
        self.action: Any = None
        self.attempts = 0

    async def run(self) -> None:
        """Ask until an answer is accepted or 1 + `max_submit_retries` attempts are spent."""
        while self.action is None and self.attempts <= self.config.max_submit_retries:
            self.attempts += 1
            response = await self.model.generate(
                list(self.messages), [], "none", self.config.sample_index
            )
            text = response.message.content or ""
            arguments, unreadable = read_json_answer(text)
            if response.finish_reason == "length" and unreadable is not None:
                unreadable = "the reply was cut off at max_tokens; " + unreadable
            self.record_call(response, unreadable or response.parse_error)
            self.messages.append(Message(role="assistant", content=text))
            left = 1 + self.config.max_submit_retries - self.attempts
            if arguments is None:
                self.feedback("unreadable_reply", unreadable or "", attempts_left=left)
                continue
            try:
                self.action = self.submit.accept(arguments)
            except ToolError as exc:
                issues = exc.issues if isinstance(exc, ArgumentError) else []
                self.record_answer(arguments, text, str(exc))
                self.feedback("rejected", str(exc), issues=issues, attempts_left=left)
                continue
            self.record_answer(arguments, text, None)

    def record_call(self, response: ChatResponse, parse_error: str | None) -> None:
        """One model call, as the tool loop records it (phase `submit`)."""
        self.model_calls.append(
            ModelCallRecord(
                index=len(self.model_calls),
                phase="submit",
                tool_choice="none",
                finish_reason=response.finish_reason,
                usage=response.usage,
                latency_s=response.latency_s,
                parse_error=parse_error,
                faults=response.faults,
            )
        )

    def record_answer(self, arguments: dict[str, Any], raw: str, error: str | None) -> None:
        """A readable answer object, accepted (`error` None) or refused."""
        self.tool_calls.append(
            ToolCallRecord(
                model_call=len(self.model_calls) - 1,
                phase="submit",
                id=f"answer_{len(self.model_calls) - 1}",
                name=self.submit.name,
                arguments=arguments,
                raw_arguments=raw,
                valid=error is None,
                error_kind=None if error is None else "rejected",
                error=error,
            )
        )

    def feedback(self, kind: str, message: str, **extra: Any) -> None:
        """Tell the model what went wrong and what to send (as a user turn)."""
        error = {"error": {"type": kind, "message": message, "hint": RETRY_HINT, **extra}}
        self.messages.append(Message(role="user", content=to_json(error)))

    def result(self, stop: str) -> LoopResult:
        """Freeze the state (messages redacted)."""
        redactor = Redactor.from_env()
        messages = [
            m.model_copy(update={"content": redactor.text(m.content)}) for m in self.messages
        ]
        usage = Usage(
            input_tokens=sum(c.usage.input_tokens for c in self.model_calls),
            output_tokens=sum(c.usage.output_tokens for c in self.model_calls),
        )
        return LoopResult(
            messages=messages,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            research_calls=0,
            submission_attempts=self.attempts,
            retries=max(self.attempts - 1, 0),
            parse_failures=sum(c.parse_error is not None for c in self.model_calls),
            recovered_calls=0,
            usage=usage,
            latency_s=sum(c.latency_s for c in self.model_calls),
            faults=CallFaults.total(c.faults for c in self.model_calls),
            action=self.action,
            fallback=stop == "fallback",
            stop_reason=stop,  # type: ignore[arg-type]
        )


async def run_json_answer(
    model: ChatModel,
    *,
    system: str,
    user: str,
    submit: SubmitTool,
    config: LoopConfig | None = None,
) -> LoopResult:
    """Ask for one JSON object, validate it with `submit`, retry, fall back to no action.

    Raises:
        LoopBudgetExceeded: A budget cap stopped the loop (`.result` is the partial record).
        ProviderError: The endpoint failed after all retries.
        CacheMiss: Replay mode met a request that was never recorded.
    """
    messages = [Message(role="system", content=system), Message(role="user", content=user)]
    loop = _JsonAnswer(model, messages, submit, config or LoopConfig())
    try:
        await loop.run()
    except BudgetExceeded as exc:
        raise LoopBudgetExceeded(str(exc), loop.result("budget")) from exc
    return loop.result("submitted" if loop.action is not None else "fallback")
