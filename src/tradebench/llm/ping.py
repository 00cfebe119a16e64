"""`ping`: one forced tool-call round trip, to check that an endpoint does tool calling."""

from __future__ import annotations

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict

from tradebench.llm.base import get_model
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import Message, ModelConfig, ToolCall, ToolSpec, Usage

ECHO = ToolSpec(
    name="echo",
    description="Echo a short message back.",
    parameters={
        "type": "object",
        "properties": {"message": {"type": "string", "maxLength": 16}},
        "required": ["message"],
        "additionalProperties": False,
    },
)
_PROMPT = [
    Message(role="system", content="You are a connectivity check. Always use the tool."),
    Message(role="user", content="Call the echo tool with the message 'pong'."),
]


class PingResult(BaseModel):
    """What one ping found."""

    model_config = ConfigDict(frozen=True)

    model: str
    """`provider:model` pinged."""
    latency_s: float
    """Latency of the successful attempt."""
    valid: bool
    """True when a tool call to `echo` with schema-valid arguments came back."""
    tool_call: ToolCall | None = None
    """The call that came back, if any."""
    error: str | None = None
    """Why the reply was not a valid tool call."""
    usage: Usage
    """Tokens of the reply."""
    attempts: int
    """HTTP attempts it took."""
    tool_choice_rung: str | None = None
    """The form the forced call went in (`object`, `required`, `auto`, `text`)."""
    tool_choice_fallbacks: int = 0
    """Forms the endpoint rejected or ignored before that one."""


async def ping_model(config: ModelConfig, retry: RetryPolicy | None = None) -> PingResult:
    """Force a call to the `echo` tool and check what comes back (never cached).

    Raises:
        ProviderError: The endpoint failed after every retry.
        ConfigError: Bad configuration (e.g. the key variable is unset).
    """
    model = get_model(config, retry=retry or RetryPolicy(max_attempts=2))
    response = await model.generate(list(_PROMPT), [ECHO], ECHO.name)
    call = next((c for c in response.message.tool_calls if c.name == ECHO.name), None)
    error = response.parse_error
    if call is None:
        error = error or "no tool call came back"
    elif error is None:
        validator = Draft202012Validator(ECHO.parameters)
        issues = [e.message for e in validator.iter_errors(call.arguments)]
        error = "; ".join(issues) or None
    stats = getattr(model, "stats", None)
    return PingResult(
        model=config.label,
        latency_s=response.latency_s,
        valid=call is not None and error is None,
        tool_call=call,
        error=error,
        usage=response.usage,
        attempts=stats.attempts if stats is not None else 1,
        tool_choice_rung=response.tool_choice_rung,
        tool_choice_fallbacks=response.faults.tool_choice_fallbacks,
    )
