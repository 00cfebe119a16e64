"""Adapter for OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter).

Uses the official `openai` SDK with its raw-response interface so that a garbage body is
ours to count, not the SDK's to raise. Quirks of local servers handled here: an assistant
turn with tool calls carries `content: ""` (never null), and with `tool_choice="auto"` a
call written as JSON text in `content` is recovered client-side (`ToolCall.recovered`).

Servers whose chat template drops tools (SmolLM2's, most base models') or the system turn
(llama.cpp's `gemma`) answer as if neither had been sent. With `tool_protocol: auto`, a
custom endpoint is probed once, before its first request with tools: three one-token
requests whose prompt-token counts tell whether the tools and the system text reached the
prompt. Where they did not, requests go in the text protocol (`text_tools`): the catalogue
in the system text, earlier calls and results as text, calls read back from the reply's
text and counted as recovered. The cache key is the logical request either way.

A forced tool call (`tool_choice` naming a tool) goes down a ladder of wire forms
(`types.RUNGS`) until one works: the object form `{"type": "function", ...}` (which LM
Studio rejects); `required` with only the forced tool offered (which DeepSeek's thinking
models and MiniMax reject); no `tool_choice` at all, only the forced tool offered and a
closing user turn asking for the call; the text protocol. A step down follows an HTTP 400
or 422 whose body names `tool_choice`, or, until a form has once worked, a readable reply
without a call of the forced tool (Ollama ignores `tool_choice` silently). The working
form is kept for the adapter's life (one per endpoint and model in a run), each step is
logged and counted (`CallFaults.tool_choice_fallbacks`) and the form is stored with the
reply (`ChatResponse.tool_choice_rung`), so a replay reports it and never probes.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from tradebench.errors import ConfigError, ProviderError
from tradebench.llm.adapter import (
    HttpChatModel,
    check_tool_choice,
    finish_parse_error,
    unreadable,
)
from tradebench.llm.parsing import (
    ArgumentsError,
    call_errors,
    parse_arguments,
    recover_calls,
    recover_forced_call,
)
from tradebench.llm.presets import preset
from tradebench.llm.redact import llm_logger
from tradebench.llm.retry import FaultStats, RetryPolicy, call_with_retries
from tradebench.llm.text_tools import plain_messages
from tradebench.llm.types import (
    RUNGS,
    CallFaults,
    ChatResponse,
    Message,
    ModelConfig,
    Rung,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)

_FINISH = {
    "function_call": "tool_calls",
    "tool_calls": "tool_calls",
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
}


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - openai is a core dependency
        raise ConfigError(
            "the openai provider needs the `openai` package: pip install 'openai>=1.40'"
        ) from exc
    return openai


def wire_message(message: Message) -> dict[str, Any]:
    """One normalised message in chat-completions form."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False),
                },
            }
            for c in message.tool_calls
        ]
    return out


def wire_tool_choice(tool_choice: ToolChoice) -> Any:
    """`auto` / `none` / `required` as is; a tool name as `{"type": "function", ...}`."""
    if tool_choice in ("auto", "none", "required"):
        return tool_choice
    return {"type": "function", "function": {"name": tool_choice}}


def _tool_call(raw_call: Any, index: int) -> ToolCall:
    fn = raw_call.get("function") or {}
    raw = fn.get("arguments")
    raw = raw if isinstance(raw, str) else json.dumps(raw or {}, ensure_ascii=False)
    try:
        args = parse_arguments(raw)
    except ArgumentsError:
        args = {}
    return ToolCall(
        id=str(raw_call.get("id") or f"call_{index}"),
        name=str(fn.get("name", "")),
        arguments=args,
        raw_arguments=raw,
    )


def read_usage(raw: dict[str, Any]) -> Usage:
    """Token counts of a chat-completions `usage` object: prompt and completion tokens,
    the prompt tokens read from the provider's cache (`prompt_tokens_details.cached_tokens`,
    DeepSeek's `prompt_cache_hit_tokens`) and the reasoning tokens
    (`completion_tokens_details.reasoning_tokens`)."""
    details_in = raw.get("prompt_tokens_details") or {}
    details_out = raw.get("completion_tokens_details") or {}
    cached = details_in.get("cached_tokens") or raw.get("prompt_cache_hit_tokens") or 0
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cached_input_tokens=int(cached),
        reasoning_tokens=int(details_out.get("reasoning_tokens") or 0),
    )


def parse_completion(
    raw: bytes, tools: Sequence[ToolSpec], tool_choice: ToolChoice, latency_s: float
) -> ChatResponse:
    """Read a chat-completions body into a `ChatResponse`; failures go in `parse_error`."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        msg = choice["message"]
        calls = [_tool_call(c, i) for i, c in enumerate(msg.get("tool_calls") or [])]
        content = msg.get("content") or ""
        reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
        usage = read_usage(data.get("usage") or {})
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        text = raw[:120].decode("utf-8", "replace").replace("\n", " ")
        return unreadable(f"unreadable body ({type(exc).__name__}): {text!r}", latency_s)
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    if not isinstance(reasoning, str):
        reasoning = json.dumps(reasoning, ensure_ascii=False)
    if not calls and tools and tool_choice != "none":
        calls = recover_calls(content, {t.name for t in tools})
        forced = tool_choice not in ("auto", "required")
        if not calls and forced and tool_choice in {t.name for t in tools}:
            calls = recover_forced_call(content, tool_choice)
    finish = _FINISH.get(str(choice.get("finish_reason")), str(choice.get("finish_reason")))
    if calls and finish == "stop":
        finish = "tool_calls"
    message = Message(role="assistant", content=content, tool_calls=calls)
    response = ChatResponse(
        message=message, usage=usage, finish_reason=finish, latency_s=latency_s, reasoning=reasoning
    )
    error = finish_parse_error(message, call_errors(response))
    return response if error is None else response.model_copy(update={"parse_error": error})


PROBE_HEADER = "X-Tradebench-Probe"
"""Marks the endpoint probe's requests (the loopback server answers them apart)."""
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "echo_word",
        "description": "Echo one word back.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string", "maxLength": 16}},
            "required": ["word"],
        },
    },
}
_PROBE_USER = {"role": "user", "content": "Say OK."}
_PROBE_SHORT = {"role": "system", "content": "Answer in one word."}
_PROBE_LONG = {
    "role": "system",
    "content": "Answer in one word. " + " ".join(["Be brief, plain and exact."] * 12),
}


class ToolSupport(BaseModel):
    """What an endpoint's chat template keeps, as its prompt-token counts show."""

    model_config = ConfigDict(frozen=True)

    tools: bool
    """The request's tools reach the prompt."""
    system: bool
    """The system turn reaches the prompt."""
    probed: bool = False
    """Measured by the probe (False: assumed, e.g. `tool_protocol: native`)."""


def support_from_counts(with_tools: int, short_system: int, long_system: int) -> ToolSupport:
    """Read the probe: prompt tokens of (short system + user + tools), (short system +
    user) and (long system + user).

    Equal counts mean the difference never reached the prompt (comparing two system texts,
    not system against none, is immune to templates that add a default system turn); a
    server that reports no usage (zeros) is taken to keep both.
    """
    if min(with_tools, short_system, long_system) <= 0:
        return ToolSupport(tools=True, system=True, probed=True)
    return ToolSupport(
        tools=with_tools > short_system, system=long_system > short_system, probed=True
    )


class ToolChoiceRejected(ProviderError):
    """The endpoint refused the request's `tool_choice` (HTTP 400/422 naming it)."""

    caller_recovers = True
    """The ladder sends the request again in another form: not a failure of the adapter
    (logged at INFO by the retry loop, not counted in `FaultStats.failures`)."""


_NAMES_TOOL_CHOICE = re.compile(r"tool[_ ]?choice", re.IGNORECASE)
INSTRUCTION = "Call the tool `{name}` now: reply with that one tool call and nothing else."
"""The closing user turn of the `auto` rung (no `tool_choice` sent)."""


def honoured(response: ChatResponse, name: str) -> bool:
    """False when a readable reply has no call of the forced tool `name` (an unreadable
    reply says nothing about the endpoint's `tool_choice`)."""
    if response.parse_error is not None:
        return True
    return any(c.name == name for c in response.message.tool_calls)


class OpenAIChatModel(HttpChatModel):
    """`ChatModel` over any OpenAI-compatible `/chat/completions` endpoint."""

    default_key_env = "OPENAI_API_KEY"
    client_class = "AsyncOpenAI"
    support: ToolSupport | None = None
    """How tools reach the endpoint; None until the first request with tools."""
    text_protocol_replies: int = 0
    """Replies obtained through the text protocol (each a recovery of dropped tools)."""
    rung: Rung = "object"
    """The forced-call form in use (see the module docstring); steps down, never up."""
    rung_confirmed: bool = False
    """A forced call has worked at `rung`: from now on only a rejection steps down."""
    send_auto: bool = True
    """Send `tool_choice: auto` (False once the endpoint rejected it: then omitted)."""
    _probe_lock: asyncio.Lock | None = None

    def __init__(self, config: ModelConfig, **options: Any) -> None:
        """As `HttpChatModel`; an `endpoint` preset sets the ladder's first rung and
        whether `tool_choice: auto` is sent, from the forms the endpoint is known to take."""
        super().__init__(config, **options)
        if config.endpoint is not None:
            known = preset(config.endpoint)
            self.rung = known.first_rung()
            self.send_auto = known.sends_auto()

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """As `HttpChatModel.generate`; a forced tool goes down the ladder of wire forms."""
        if tools and tool_choice == "auto":
            return await self._auto(messages, tools, sample_index)
        if not tools or tool_choice in ("none", "required"):
            return await super().generate(messages, tools, tool_choice, sample_index)
        check_tool_choice(tool_choice, tools)
        await self._prepare_tools()
        pinned = self.config.forced_choice
        if self.text_tools:  # the endpoint drops tools: text is the only form it takes
            rungs: tuple[Rung, ...] = ("text",)
        elif pinned != "ladder":
            rungs = (pinned,)
        else:
            rungs = RUNGS[RUNGS.index(self.rung) :]
        spent, faults, steps = Usage(), CallFaults(), 0
        for i, rung in enumerate(rungs):
            last = i == len(rungs) - 1
            body = self._forced_request(messages, tools, tool_choice, sample_index, rung)
            try:
                response = await self._exchange(body, messages, tools, tool_choice)
            except ToolChoiceRejected as exc:
                if last:
                    self.stats.failures += 1
                    raise
                self._step_down(rungs[i + 1], f"the endpoint rejected it: {exc}")
                steps += 1
                continue
            faults = CallFaults.total([faults, response.faults])
            ok = honoured(response, tool_choice)
            if not ok and not last and not self.rung_confirmed:
                spent = spent + response.usage
                self._step_down(rungs[i + 1], "the reply did not call the forced tool")
                steps += 1
                continue
            if pinned == "ladder":
                self.rung_confirmed = self.rung_confirmed or ok
            faults = faults.model_copy(update={"tool_choice_fallbacks": steps})
            update = {"usage": spent + response.usage, "faults": faults, "tool_choice_rung": rung}
            return response.model_copy(update=update)
        raise AssertionError("unreachable: the last rung returns or raises")  # pragma: no cover

    async def _auto(
        self, messages: list[Message], tools: Sequence[ToolSpec], sample_index: int
    ) -> ChatResponse:
        """A request with tools under `auto`; an endpoint that rejects any `tool_choice`
        gets it without the field (auto is the default), from then on."""
        await self._prepare_tools()
        body = self._request(messages, tools, "auto", sample_index)
        if not self.send_auto:
            body.pop("tool_choice", None)
            return await self._exchange(body, messages, tools, "auto")
        try:
            return await self._exchange(body, messages, tools, "auto")
        except ToolChoiceRejected as exc:
            llm_logger().warning(
                "%s: `tool_choice: auto` rejected (%s); requests now omit it",
                self.config.label,
                exc,
            )
            self.send_auto = False
            body.pop("tool_choice", None)
            response = await self._exchange(body, messages, tools, "auto")
        faults = response.faults.model_copy(update={"tool_choice_fallbacks": 1})
        return response.model_copy(update={"faults": faults})

    def _step_down(self, to: Rung, why: str) -> None:
        """Use rung `to` for this and every later forced call (never moving back up when
        concurrent calls step down at once); say so."""
        llm_logger().warning(
            "%s: forced tool call failed one form (%s); forced calls now go as `%s`",
            self.config.label,
            why,
            to,
        )
        if RUNGS.index(to) > RUNGS.index(self.rung):
            self.rung = to

    def _forced_request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        name: str,
        sample_index: int,
        rung: Rung,
    ) -> dict[str, Any]:
        """The request body forcing tool `name` in the form `rung`."""
        only = [t for t in tools if t.name == name]
        if rung == "object":
            return self._request(messages, tools, name, sample_index)
        if rung == "required":
            return self._request(messages, only, "required", sample_index)
        if rung == "auto":
            ask = Message(role="user", content=INSTRUCTION.format(name=name))
            body = self._request([*messages, ask], only, "auto", sample_index)
            body.pop("tool_choice", None)
            return body
        body = self._request(messages, tools, name, sample_index)
        return self._plain(body, name, text=True) if "tools" in body else body

    def _status_fault(self, status: int, response: Any) -> Exception:
        """As the base class; a 400/422 naming `tool_choice` is a `ToolChoiceRejected`."""
        if status in (400, 422) and _NAMES_TOOL_CHOICE.search(response.text or ""):
            return ToolChoiceRejected(
                f"{self.config.label}: HTTP {status}: {self._excerpt(response.text)}"
            )
        return super()._status_fault(status, response)

    async def _prepare_tools(self) -> None:
        """Decide, once, between the native and the text tool protocol."""
        if self.support is not None:
            return
        protocol = self.config.tool_protocol
        if protocol != "auto" or self.config.base_url is None:
            self.support = ToolSupport(tools=protocol != "text", system=True)
            return
        if self._probe_lock is None:
            self._probe_lock = asyncio.Lock()
        async with self._probe_lock:
            if self.support is None:
                self.support = await self._probe()
                if not self.support.tools:
                    llm_logger().warning(
                        "%s drops tools in its chat template: the tool catalogue goes into "
                        "the prompt and calls are read from the reply's text",
                        self.config.label,
                    )
                if not self.support.system:
                    llm_logger().warning(
                        "%s drops the system turn in its chat template: the system text "
                        "opens the first user turn instead",
                        self.config.label,
                    )

    async def _probe(self) -> ToolSupport:
        """Three one-token requests; an endpoint that fails them keeps the native protocol."""
        base = {"model": self.config.model, "max_tokens": 1, "temperature": 0.0}
        bodies = [
            {**base, "messages": [_PROBE_SHORT, _PROBE_USER], "tools": [_PROBE_TOOL]},
            {**base, "messages": [_PROBE_SHORT, _PROBE_USER]},
            {**base, "messages": [_PROBE_LONG, _PROBE_USER]},
        ]
        counts: list[int] = []
        policy = RetryPolicy(max_attempts=2, timeout_s=self._retry.timeout_s)
        try:
            for body in bodies:
                raw, _ = await call_with_retries(
                    lambda b=body: self._send(b, probe=True),
                    policy=policy,
                    stats=FaultStats(),
                    label=self.config.label,
                    rng=self._rng,
                )
                usage = json.loads(raw).get("usage") or {}
                counts.append(int(usage.get("prompt_tokens") or 0))
        except (ProviderError, ValueError, KeyError, AttributeError, TypeError) as exc:
            # a failed or odd probe reply keeps the native protocol
            llm_logger().info("%s: tool probe failed (%s); native tools", self.config.label, exc)
            return ToolSupport(tools=True, system=True)
        return support_from_counts(*counts)

    @property
    def text_tools(self) -> bool:
        """True when requests go in the text protocol."""
        return self.support is not None and not self.support.tools

    def _plain(self, body: dict[str, Any], tool_choice: ToolChoice, text: bool) -> dict[str, Any]:
        """The body as the endpoint's template can take it: in the text protocol (`text`)
        the tools move into the prompt (no `tools` field); without a system role the
        system text opens the first user turn."""
        fold = self.support is not None and not self.support.system
        tools: list[dict[str, Any]] = []
        if text and "tools" in body:
            tools = body.pop("tools")
            body.pop("tool_choice", None)
            self.text_protocol_replies += 1
        body["messages"] = plain_messages(
            body["messages"], tools, wire_tool_choice(tool_choice), fold_system=fold
        )
        return body

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        sample_index: int = 0,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [wire_message(m) for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": sample_index,  # the sample is the provider's sampling seed
        }
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
            body["tool_choice"] = wire_tool_choice(tool_choice)
        if "max_completion_tokens" in self.config.extra:
            del body["max_tokens"]
        if self.support is not None and (self.text_tools or not self.support.system):
            return self._plain(body, tool_choice, self.text_tools)
        return body

    def _sdk(self) -> Any:
        return _import_sdk()

    async def _create(self, body: dict[str, Any], probe: bool = False) -> bytes:
        options: Any = {"headers": {PROBE_HEADER: "1"}} if probe else {}
        text = await self.client.post(
            "/chat/completions", body={**body, **self.config.extra}, cast_to=str, options=options
        )
        return text.encode()

    def _parse(
        self, raw: bytes, tools: Sequence[ToolSpec], tool_choice: ToolChoice, latency_s: float
    ) -> ChatResponse:
        return parse_completion(raw, tools, tool_choice, latency_s)
