"""Configuration and records of the LLM tool loop (`tradebench.agents.tool_loop`).

Records hold what is reproducible, plus what the endpoint did: on a replay from the cache
the same spec gives the same `LoopResult` (latencies are the recorded ones; whether a reply
came from the cache is a live statistic of the cache, not part of the record), except the
`faults` of each call (HTTP retries after 429s, 5xx, timeouts and dropped connections,
and the backoff they cost), which a replay never meets: they are zero on replayed calls, so a
fault-free run replays byte for byte.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tradebench.errors import BudgetExceeded
from tradebench.llm.types import CallFaults, Message, Rung, Usage

Phase = Literal["research", "submit"]
CallErrorKind = Literal[
    "malformed_json",
    "unknown_tool",
    "invalid_arguments",
    "tool_error",
    "over_limit",
    "wrong_tool",
    "rejected",
    "after_submission",
]
StopReason = Literal["submitted", "fallback", "budget"]


class LoopConfig(BaseModel):
    """Knobs of one tool loop."""

    model_config = ConfigDict(frozen=True)

    max_tool_calls: int = Field(default=20, ge=0)
    """Research tool calls allowed (valid or not); further calls are refused."""
    max_submit_retries: int = Field(default=3, ge=0)
    """Extra submission attempts after an invalid one (attempts = 1 + retries)."""
    max_parse_failures: int = Field(default=3, ge=1)
    """Unreadable research replies (garbage, empty) before moving on to submission."""
    offer_submit_in_research: bool = True
    """Offer the submit tool during research so a model may submit early."""
    submit_prompt: str = "Research is over. Call `{submit}` now with your final decision."
    """User message that opens the forced submission phase (`{submit}` = tool name)."""
    sample_index: int = 0
    """Sample index passed to every model call (part of the cache key)."""


class ModelCallRecord(BaseModel):
    """One model call of the loop."""

    model_config = ConfigDict(frozen=True)

    index: int
    """Position of the call in the loop (0-based)."""
    phase: Phase
    """`research` (tool_choice auto) or `submit` (submit tool forced)."""
    tool_choice: str
    """The tool_choice sent."""
    finish_reason: str
    """Normalised finish reason of the reply."""
    usage: Usage
    """Tokens of the reply."""
    latency_s: float
    """Latency of the reply as recorded when it was made."""
    parse_error: str | None = None
    """Why the reply could not be fully read (counted as a parse failure)."""
    tool_calls: int = 0
    """Tool calls in the reply."""
    recovered_calls: int = 0
    """Of those, calls recovered from JSON text in the content."""
    faults: CallFaults = Field(default_factory=CallFaults)
    """HTTP retries and transient faults before the reply (none when it came from the
    cache or on the first attempt)."""
    tool_choice_rung: Rung | None = None
    """How the forced tool was asked for (`object`, `required`, `auto` with an instruction,
    `text`: see `llm.types.Rung`); None for research calls."""
    reasoning: str = ""
    """The reply's reasoning text, kept for the trace; never read as the answer."""


class ToolCallRecord(BaseModel):
    """One tool call the model made, with its validity."""

    model_config = ConfigDict(frozen=True)

    model_call: int
    """Index of the model call that produced it."""
    phase: Phase
    """Phase of that model call."""
    id: str
    """Call id."""
    name: str
    """Tool called."""
    arguments: dict[str, Any]
    """Parsed arguments (empty when malformed)."""
    raw_arguments: str
    """Arguments as the model wrote them."""
    recovered: bool = False
    """Found as JSON text in the content rather than as a tool call."""
    valid: bool
    """True when the call ran (or the submission was accepted)."""
    error_kind: CallErrorKind | None = None
    """Why it was not valid."""
    error: str | None = None
    """The error text returned to the model."""


class LoopResult(BaseModel):
    """Everything one tool loop did, and what it submitted."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = 1
    """Version of this record."""
    messages: list[Message]
    """The full conversation (redacted)."""
    model_calls: list[ModelCallRecord]
    """Every model call in order."""
    tool_calls: list[ToolCallRecord]
    """Every tool call in order, with validity."""
    research_calls: int
    """Research tool calls made (counted against `max_tool_calls`)."""
    submission_attempts: int
    """Submit calls (and forced replies without one) in total."""
    retries: int
    """Submission attempts after the first."""
    parse_failures: int
    """Replies with a `parse_error` (garbage, empty, malformed or truncated tool JSON)."""
    recovered_calls: int
    """Tool calls recovered from text content."""
    usage: Usage
    """Tokens over all model calls."""
    latency_s: float
    """Sum of model-call latencies."""
    faults: CallFaults = Field(default_factory=CallFaults)
    """HTTP retries and transient faults summed over the model calls (zero for replies
    from the cache); `faults.tool_choice_fallbacks` counts the forced-call ladder's steps."""
    action: Any = None
    """The validated action, or None (fallback to no action, or stopped for budget)."""
    fallback: bool
    """True when every submission attempt failed and the loop fell back to no action."""
    research_cap_hit: bool = False
    """True when research used every allowed tool call (`max_tool_calls`, a safety cap)."""
    stop_reason: StopReason
    """`submitted`, `fallback`, or `budget` (only on `LoopBudgetExceeded.result`)."""

    @property
    def valid_tool_calls(self) -> int:
        """Tool calls that ran or were accepted (for step records' validity counts)."""
        return sum(c.valid for c in self.tool_calls)


class LoopBudgetExceeded(BudgetExceeded):
    """The budget stopped a tool loop; `result` is the partial record to save."""

    def __init__(self, message: str, result: LoopResult) -> None:
        """Keep the budget's message and the partial loop record."""
        super().__init__(message)
        self.result = result
