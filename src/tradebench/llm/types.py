"""Provider-neutral chat types: messages, tools, tool calls, usage, replies, model configs.

Every adapter translates these to and from its wire format, so the agent loop, the cache
and the run records never see a vendor type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tradebench.errors import ConfigError
from tradebench.llm.presets import preset
from tradebench.llm.providers import check_provider, registered_providers

Role = Literal["system", "user", "assistant", "tool"]
ToolChoice = Literal["auto", "none", "required"] | str
"""`auto` (model decides), `none` (no tools), `required` (some tool), or a tool name."""

ToolProtocol = Literal["auto", "native", "text"]
Rung = Literal["object", "required", "auto", "text"]
"""How a forced tool call went over the wire, from the strongest form down (the ladder of
`openai_provider`): `tool_choice` as the object naming the tool; `required` with only that
tool offered; no `tool_choice` (the default, auto) with only that tool offered and an
instruction to call it; the text protocol (catalogue in the prompt, call read from text)."""
RUNGS: tuple[Rung, ...] = ("object", "required", "auto", "text")
ForcedChoice = Literal["ladder", "object", "required", "auto", "text"]
_SECRET_KEY = re.compile(r"(?i)(api[-_]?key|authorization|secret|password|bearer|access[-_]?token)")


def check_base_url(value: str | None) -> str | None:
    """`value` when it is an http(s) URL with a host (or None): a URL that can never be
    reached is refused when it is read, not retried against.

    Raises:
        ValueError: `value` has another scheme, no host, or does not parse.
    """
    if value is None:
        return None
    try:
        parts = urlsplit(value)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"base_url {value!r} is not an http(s) URL with a host; write it like "
            "http://127.0.0.1:8080/v1"
        )
    return value


class ToolCall(BaseModel):
    """One tool call the model asked for."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Provider call id; tool results refer to it."""
    name: str
    """Name of the tool called."""
    arguments: dict[str, Any]
    """Parsed arguments (empty when `raw_arguments` could not be parsed)."""
    raw_arguments: str = ""
    """Arguments exactly as the model produced them (JSON text)."""
    recovered: bool = False
    """True when the call was found as JSON text in the reply's content, not as a tool call."""


class Message(BaseModel):
    """One chat message in the normalised conversation."""

    model_config = ConfigDict(frozen=True)

    role: Role
    """`system`, `user`, `assistant` or `tool` (a tool result)."""
    content: str = ""
    """Text of the message (for a tool message: the tool result, usually JSON)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls of an assistant message."""
    tool_call_id: str | None = None
    """For a tool message: the id of the call it answers."""
    name: str | None = None
    """For a tool message: the tool's name."""


class ToolSpec(BaseModel):
    """A tool the model may call, described by a JSON Schema for its arguments."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Tool name (letters, digits, `_` and `-`)."""
    description: str
    """What the tool does, shown to the model."""
    parameters: dict[str, Any]
    """JSON Schema of the arguments object. Bound strings and arrays (`maxLength`,
    `maxItems`) so grammar-forced output cannot run past `max_tokens`."""

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", value):
            raise ValueError("tool names use 1-64 letters, digits, '_' or '-'")
        return value


class Usage(BaseModel):
    """Tokens one reply consumed."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    """Prompt tokens billed."""
    output_tokens: int = 0
    """Completion tokens billed."""
    cached_input_tokens: int = 0
    """Of `input_tokens`, those read from the provider's prompt cache (billed at the cache
    read rate where the price table has one)."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those spent on reasoning (billed as output tokens)."""

    @property
    def total(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        """Field-wise sum."""
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


FAULT_KINDS = ("http_429", "http_5xx", "timeout", "connection")
"""Transient fault kinds counted on their own; any other retryable kind (HTTP 408, 409,
425) is counted as `other`."""


class CallFaults(BaseModel):
    """What one logical request met at the endpoint before its reply: its HTTP retries,
    the transient faults by kind that caused them, and the time they cost.

    A record of the endpoint, not of the reply: it is never cached, so a reply served from
    the cache carries the defaults (no retry, no fault), as does a reply that came on the
    first attempt; a run without faults replays byte for byte.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    retries: int = 0
    """HTTP attempts after the first (a reply from the endpoint took `1 + retries`
    attempts; see `ChatResponse.http_attempts`)."""
    http_429: int = 0
    """Attempts answered with HTTP 429 (rate limited)."""
    http_5xx: int = 0
    """Attempts answered with a retryable 5xx (500, 502, 503, 504, 520, 522, 524, 529)."""
    timeout: int = 0
    """Attempts that ran past the per-attempt timeout."""
    connection: int = 0
    """Attempts whose connection failed or was dropped before a reply."""
    other: int = 0
    """Attempts answered with another retryable status (HTTP 408, 409, 425)."""
    tool_choice_fallbacks: int = 0
    """Steps down the forced-call ladder this request took: the endpoint rejected the
    `tool_choice` form sent (HTTP 400 naming it) or its reply ignored the forced tool, and
    the request was sent again in the next form (`ChatResponse.tool_choice_rung`)."""
    retry_wait_s: float = 0.0
    """Seconds of backoff slept between attempts, as scheduled (Retry-After honoured)."""
    failed_attempt_s: float = 0.0
    """Wall seconds spent in the attempts that failed (rate-limiter wait included)."""

    def by_kind(self) -> dict[str, int]:
        """The non-zero fault counts by kind (`http_429`, ..., `other`)."""
        counts = {k: getattr(self, k) for k in (*FAULT_KINDS, "other")}
        return {k: v for k, v in counts.items() if v}

    @classmethod
    def field_for(cls, kind: str) -> str:
        """The field that counts a fault `kind` (`http_408` -> `other`)."""
        return kind if kind in FAULT_KINDS else "other"

    @classmethod
    def total(cls, items: Iterable[CallFaults]) -> CallFaults:
        """The field-wise sum of several requests' records."""
        records = list(items)
        return cls(**{name: sum(getattr(f, name) for f in records) for name in cls.model_fields})


class ChatResponse(BaseModel):
    """One normalised model reply."""

    model_config = ConfigDict(frozen=True)

    message: Message
    """The assistant message (text and/or tool calls)."""
    usage: Usage
    """Tokens billed for this reply."""
    finish_reason: str
    """`stop`, `tool_calls`, `length`, `content_filter` or `error` (unreadable reply)."""
    latency_s: float
    """Wall time of the successful HTTP attempt, in seconds (kept as recorded on replay)."""
    cached: bool = False
    """True when the reply came from the cache instead of the endpoint."""
    parse_error: str | None = None
    """Why (part of) the reply could not be read: garbage body, empty reply, truncated or
    malformed tool-call JSON. None for a clean reply."""
    faults: CallFaults = Field(default_factory=CallFaults)
    """Retries and transient faults of the request at the endpoint (never cached: a
    cached reply has none)."""
    reasoning: str = ""
    """The model's reasoning text (`reasoning_content`, thinking blocks): kept for the
    trace, never read as the answer or for tool calls."""
    tool_choice_rung: Rung | None = None
    """How the forced tool was asked for (see `Rung`); None when no tool was forced.
    Stored with the reply, so a replay reports the rung the live run used."""

    @property
    def http_attempts(self) -> int:
        """HTTP attempts this reply took: 0 from the cache, else 1 + `faults.retries` +
        `faults.tool_choice_fallbacks`."""
        return 0 if self.cached else 1 + self.faults.retries + self.faults.tool_choice_fallbacks


class ModelConfig(BaseModel):
    """How to reach one model. API keys come only from the environment (`api_key_env`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    """Wire format / SDK, a name in the provider registry (`llm.providers`): `openai` (any
    OpenAI-compatible server), `anthropic`, or one an installed package registers."""
    model: str
    """Model name sent to the endpoint."""
    base_url: str | None = None
    """Endpoint root (OpenAI style includes `/v1`); None = the provider's public API."""
    api_key_env: str | None = None
    """Name of the environment variable holding the key (default `OPENAI_API_KEY` /
    `ANTHROPIC_API_KEY`)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature (0 to 2, the widest range a provider accepts)."""
    max_tokens: int = 1024
    """Cap on output tokens per reply."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Extra request-body fields passed through (e.g. `top_p`, `seed`); never credentials."""
    tool_protocol: ToolProtocol = "auto"
    """How tools reach the model (OpenAI-compatible endpoints): `native` (the request's
    `tools`), `text` (the catalogue rendered into the prompt, calls read from the reply's
    text: for servers whose chat template drops tools), or `auto`: native, except that a
    custom `base_url` is probed once for a template that drops tools or the system turn,
    and gets `text` (and the system text folded into the first user turn) if so."""
    endpoint: str | None = None
    """A named endpoint preset (`llm.presets`: `deepseek`, `ollama`, ...): fills `base_url`
    and `api_key_env` where they are not given and sets which `tool_choice` forms are
    tried. Where requests go, not what they ask: outside the reply cache's key."""
    forced_choice: ForcedChoice = "ladder"
    """How a forced tool call is sent (OpenAI-compatible endpoints): `ladder` starts with
    the object form of `tool_choice` and steps down (`required`, `auto` with an
    instruction, the text protocol) when the endpoint rejects a form or ignores it; a
    rung's name pins that form (no probing, no fallback)."""

    @field_validator("provider")
    @classmethod
    def _registered(cls, value: str) -> str:
        return check_provider(value)

    @model_validator(mode="before")
    @classmethod
    def _from_preset(cls, raw: Any) -> Any:
        """Fill `base_url` and `api_key_env` from the `endpoint` preset where not given."""
        if not isinstance(raw, dict) or raw.get("endpoint") is None:
            return raw
        try:
            chosen = preset(str(raw["endpoint"]))
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        out = dict(raw)
        if out.get("base_url") is None:
            out["base_url"] = chosen.base_url
        if out.get("api_key_env") is None:
            out["api_key_env"] = chosen.api_key_env
        return out

    @field_validator("base_url")
    @classmethod
    def _reachable(cls, value: str | None) -> str | None:
        return check_base_url(value)

    @field_validator("extra")
    @classmethod
    def _no_credentials(cls, value: dict[str, Any]) -> dict[str, Any]:
        bad = _credential_keys(value)
        if bad:
            raise ValueError(
                f"`extra` must not carry credentials ({', '.join(bad)}); "
                "put the key in an environment variable and name it in `api_key_env`"
            )
        return value

    @property
    def label(self) -> str:
        """`provider:model`, the key used in price tables and logs."""
        return f"{self.provider}:{self.model}"

    @classmethod
    def parse(cls, spec: str, base_url: str | None = None, **fields: Any) -> ModelConfig:
        """Build a config from CLI shorthand `provider:model` (e.g. `openai:gpt-4.1-mini`).

        Args:
            spec: `provider:model`; the model part may itself contain colons.
            base_url: Optional endpoint root (for vLLM, Ollama, llama.cpp, OpenRouter).
            **fields: Any other `ModelConfig` field (temperature, max_tokens, ...).

        Raises:
            ConfigError: The shorthand has no known provider prefix.
        """
        provider, sep, model = spec.partition(":")
        known = registered_providers()
        if not sep or provider not in known or not model:
            raise ConfigError(
                f"model {spec!r} is not `provider:model`; use e.g. `openai:gpt-4.1-mini` or "
                f"`anthropic:claude-sonnet-4-5` (providers: {', '.join(known)})"
            )
        return cls(provider=provider, model=model, base_url=base_url, **fields)


def _credential_keys(value: Any, prefix: str = "") -> list[str]:
    """Paths of dict keys that look like credentials, searched recursively."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}{key}"
            if isinstance(key, str) and _SECRET_KEY.search(key):
                found.append(path)
            found.extend(_credential_keys(item, f"{path}."))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_credential_keys(item, f"{prefix}{i}."))
    return found
