"""What both HTTP adapters share: keys from the environment, limits, retries, timing, counts.

A provider subclass supplies three pieces: `_request` (normalised conversation -> request
body), `_send` (one HTTP attempt through the official SDK, SDK errors mapped to
`TransientFault` / `ProviderError`) and `_parse` (response body -> `ChatResponse`; an
unreadable body becomes a reply with `parse_error`, never an exception).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from tradebench.errors import ConfigError, ProviderError
from tradebench.llm.limits import RateLimiter
from tradebench.llm.redact import Redactor, llm_logger
from tradebench.llm.retry import (
    RETRYABLE_STATUS,
    FaultStats,
    RetryPolicy,
    TransientFault,
    call_with_retries,
    parse_retry_after,
    status_kind,
)
from tradebench.llm.types import ChatResponse, Message, ModelConfig, ToolChoice, ToolSpec, Usage

NO_KEY = "no-key"
"""Placeholder key sent to a custom `base_url` when no `api_key_env` is configured."""
CLIENT_SHARDS = 8
"""SDK clients (each with its own connection pool) an adapter spreads its requests over."""


def resolve_api_key(config: ModelConfig, default_env: str) -> str:
    """The API key for `config`, read only from the environment.

    With a custom `base_url` and no `api_key_env`, no key is sent (a placeholder), so a
    public-API key never leaks to a local or third-party server by default.

    Raises:
        ConfigError: The variable that should hold the key is unset or empty.
    """
    if config.api_key_env is None and config.base_url is not None:
        return NO_KEY
    env = config.api_key_env or default_env
    key = os.environ.get(env, "")
    if not key:
        raise ConfigError(
            f"{config.label}: environment variable {env} is not set; export the API key "
            "there (keys are read only from the environment)"
        )
    return key


def check_tool_choice(tool_choice: ToolChoice, tools: Sequence[ToolSpec]) -> None:
    """Reject a `tool_choice` that names a tool not offered, or forces tools with none.

    Raises:
        ConfigError: The choice cannot be satisfied.
    """
    if tool_choice in ("auto", "none"):
        return
    if not tools:
        raise ConfigError(f"tool_choice={tool_choice!r} needs at least one tool")
    if tool_choice != "required" and tool_choice not in {t.name for t in tools}:
        raise ConfigError(f"tool_choice names {tool_choice!r}, which is not among the tools")


def estimate_tokens(
    messages: Sequence[Message], max_tokens: int, tools: Sequence[ToolSpec] = ()
) -> int:
    """Rough token charge of a request before it is sent: characters / 4 of the messages
    and the tool schemas (providers bill both as input), plus `max_tokens`."""
    chars = sum(len(m.content) + sum(len(c.raw_arguments) for c in m.tool_calls) for m in messages)
    chars += sum(len(t.model_dump_json()) for t in tools)
    return chars // 4 + max_tokens


class HttpChatModel(ABC):
    """Base of the SDK-backed adapters; implements `ChatModel.generate`."""

    default_key_env: ClassVar[str]
    client_class: ClassVar[str]
    """Name of the SDK's async client class (`AsyncOpenAI`, `AsyncAnthropic`)."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        limiter: RateLimiter | None = None,
        retry: RetryPolicy | None = None,
        replay: bool = False,
    ) -> None:
        """Resolve the key now (fail fast); the SDK client is made on first use. With
        `replay` (a cache that only replays) nothing is ever sent, so no key is needed."""
        self.config = config
        self.stats = FaultStats()
        self._limiter = limiter
        self._retry = retry or RetryPolicy()
        self._replay = replay
        self._api_key = NO_KEY if replay else resolve_api_key(config, self.default_key_env)
        self.redactor = Redactor.from_env(extra=[self._api_key])
        self._clients: list[Any] = []
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._turn = 0
        self._rng = random.Random()

    @property
    def client(self) -> Any:
        """An SDK client of the running event loop (remade if the loop changed), taken in
        turn from `CLIENT_SHARDS`: the HTTP pool scans every connection it holds for each
        request it places, so many episodes in flight on one pool cost O(connections) per
        call; shards keep each pool small."""
        if self._replay:
            raise ConfigError(f"{self.config.label}: replay mode sends no request")
        loop = asyncio.get_running_loop()
        if self._client_loop is not loop or not self._clients:
            self._clients = [self._make_client(self._api_key) for _ in range(CLIENT_SHARDS)]
            self._client_loop = loop
        self._turn = (self._turn + 1) % CLIENT_SHARDS
        return self._clients[self._turn]

    def _make_client(self, api_key: str) -> Any:
        """Build the SDK's async client (SDK-level retries off: we retry ourselves).

        The HTTP client is passed explicitly: the SDK's own default schedules a close on
        garbage collection, which fails noisily once its event loop has been closed.
        """
        sdk = self._sdk()
        return getattr(sdk, self.client_class)(
            api_key=api_key,
            base_url=self.config.base_url,
            max_retries=0,
            timeout=self._retry.timeout_s,
            http_client=sdk.DefaultAsyncHttpxClient(timeout=self._retry.timeout_s),
        )

    async def aclose(self) -> None:
        """Close the HTTP connections of the current event loop's clients."""
        if self._client_loop is asyncio.get_running_loop():
            for client in self._clients:
                await client.close()
        self._clients = []

    @abstractmethod
    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        sample_index: int = 0,
    ) -> dict[str, Any]:
        """Translate the normalised request into this provider's request body; the sample
        index becomes the provider's sampling seed where its API has one (`extra` may
        override it)."""

    async def _prepare_tools(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Find out, once, how tools reach this endpoint (a provider may probe it)."""

    @abstractmethod
    def _sdk(self) -> Any:
        """The provider's SDK module (imported lazily, with an install hint)."""

    @abstractmethod
    async def _create(self, body: dict[str, Any]) -> bytes:
        """POST `body` (plus `config.extra`) through the SDK client; returns the raw body.

        Uses the SDK's generic `post` with `cast_to=str`: the SDK still does auth, base URL,
        headers, timeouts and error statuses, but neither re-walks the typed request (a
        cost that grows with the conversation) nor parses the body, so a garbage body is
        ours to count as a parse failure.
        """

    @abstractmethod
    def _parse(
        self, raw: bytes, tools: Sequence[ToolSpec], tool_choice: ToolChoice, latency_s: float
    ) -> ChatResponse:
        """Translate a raw body into a `ChatResponse` (parse failures go in `parse_error`)."""

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """Send one request with limits and retries; see `ChatModel.generate`."""
        check_tool_choice(tool_choice, tools)
        if tools:
            await self._prepare_tools()
        body = self._request(messages, tools, tool_choice, sample_index)
        return await self._exchange(body, messages, tools, tool_choice)

    async def _exchange(
        self,
        body: dict[str, Any],
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
    ) -> ChatResponse:
        """Send one request body with limits and retries; read, scrub and count the reply."""
        estimate = estimate_tokens(messages, self.config.max_tokens, tools)
        (raw, latency, charge), faults = await call_with_retries(
            lambda: self._attempt(body, estimate),
            policy=self._retry,
            stats=self.stats,
            label=self.config.label,
            rng=self._rng,
        )
        parsed = self._parse(raw, tools, tool_choice, latency)
        response = scrub_response(parsed, self.redactor).model_copy(update={"faults": faults})
        if charge is not None:
            charge.settle(response.usage.total)
        if response.parse_error is not None:
            self.stats.parse_failures += 1
            llm_logger().info("%s reply unreadable: %s", self.config.label, response.parse_error)
        return response

    async def _attempt(self, body: dict[str, Any], estimate: int) -> tuple[bytes, float, Any]:
        _ = self.client  # build the SDK client outside the timed region
        if self._limiter is None:
            start = time.perf_counter()
            raw = await self._send(body)
            return raw, time.perf_counter() - start, None
        async with self._limiter.slot(estimate) as charge:
            start, sent_at = time.perf_counter(), self._limiter.started()
            try:
                raw = await self._send(body)
            except TransientFault as fault:
                if fault.kind == "http_429":
                    self._limiter.throttled(fault.retry_after, sent_at)
                raise
            self._limiter.succeeded()
            return raw, time.perf_counter() - start, charge

    async def _send(self, body: dict[str, Any], probe: bool = False) -> bytes:
        """One HTTP attempt; the raw body, or SDK errors as TransientFault/ProviderError.
        `probe`: the request is the endpoint probe's (marked, never a model call)."""
        sdk = self._sdk()
        try:
            return await (self._create(body, probe=True) if probe else self._create(body))
        except sdk.APIStatusError as exc:
            raise self._status_fault(exc.status_code, exc.response) from None
        except sdk.APITimeoutError as exc:
            raise TransientFault("timeout", self._excerpt(str(exc))) from None
        except sdk.APIConnectionError as exc:
            raise TransientFault("connection", self._excerpt(str(exc.__cause__ or exc))) from None

    def _status_fault(self, status: int, response: Any) -> Exception:
        """A retryable `TransientFault` or a final `ProviderError` for an HTTP error status."""
        detail = f"HTTP {status}: {self._excerpt(response.text)}"
        if status in RETRYABLE_STATUS:
            retry_after = parse_retry_after(dict(response.headers))
            return TransientFault(status_kind(status), detail, retry_after)
        if status not in (401, 403):
            hint = "Check the model name and base_url."
        elif self._api_key == NO_KEY:
            hint = (
                "No API key was sent (a custom base_url without api_key_env): name the "
                "environment variable holding this endpoint's key in api_key_env "
                "(--api-key-env on the command line)."
            )
        else:
            env = self.config.api_key_env or self.default_key_env
            hint = f"Check the key in {env} and that it may use this model."
        return ProviderError(f"{self.config.label}: {detail}. {hint}")

    def _excerpt(self, text: str, limit: int = 200) -> str:
        """A redacted, shortened piece of a body for error messages."""
        clean = self.redactor.text(text.strip().replace("\n", " "))
        return clean if len(clean) <= limit else clean[:limit] + "..."


def scrub_response(response: ChatResponse, redactor: Redactor) -> ChatResponse:
    """The reply with credentials scrubbed from its text and tool calls, at the model
    boundary: an endpoint that echoes the key (a hostile or misconfigured proxy) cannot put
    it into the cache, the traces, the orders or the report. Replays return what was live."""
    message = response.message
    calls = [
        c.model_copy(
            update={
                "arguments": redactor.value(c.arguments),
                "raw_arguments": redactor.text(c.raw_arguments),
            }
        )
        for c in message.tool_calls
    ]
    clean = message.model_copy(
        update={"content": redactor.text(message.content), "tool_calls": calls}
    )
    error = None if response.parse_error is None else redactor.text(response.parse_error)
    reasoning = redactor.text(response.reasoning)
    update = {"message": clean, "parse_error": error, "reasoning": reasoning}
    return response.model_copy(update=update)


def unreadable(reason: str, latency_s: float, usage: Usage | None = None) -> ChatResponse:
    """A reply that arrived but could not be read: empty message, `finish_reason='error'`."""
    return ChatResponse(
        message=Message(role="assistant"),
        usage=usage or Usage(),
        finish_reason="error",
        latency_s=latency_s,
        parse_error=reason,
    )


def finish_parse_error(message: Message, call_problems: dict[str, str]) -> str | None:
    """The `parse_error` of an otherwise readable reply: empty, or bad tool-call arguments."""
    if call_problems:
        by_id = {c.id: c.name for c in message.tool_calls}
        first_id, reason = next(iter(call_problems.items()))
        return f"tool call {by_id.get(first_id, '?')!r}: {reason}"
    if not message.content.strip() and not message.tool_calls:
        return "empty reply: no text and no tool call"
    return None
