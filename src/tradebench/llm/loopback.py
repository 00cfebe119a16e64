"""A real HTTP server on 127.0.0.1 that speaks both wire formats with scripted replies.

`POST .../chat/completions` answers in the OpenAI format, `POST .../messages` in the
Anthropic format. Each request takes the next scripted `Reply` (tool calls, text, HTTP
errors with Retry-After, slow replies, truncated tool-call JSON, garbage, empty replies,
dropped connections); when the script is empty a responder decides (by default: call the
forced tool with a minimal valid argument object, else reply with text). Every request is
recorded with its JSON body and headers, so tests assert on what actually went over the
wire.

`quirks` give the server the personality of a real endpoint (`Quirk`): refusing forms of
`tool_choice` with HTTP 400 as LM Studio, DeepSeek's thinking models and MiniMax do,
ignoring it as Ollama does, never calling tools natively, returning `reasoning_content`
and cached-prompt usage. A server with quirks answers, once its script is empty, as a
model that follows instructions would (`personality_responder`).

Tests, perf scripts and other benchmarks reuse it; `python -m tradebench.llm.loopback` runs
it standalone and prints its port.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PROBE_HEADER = "X-Tradebench-Probe"
"""Header of the OpenAI adapter's endpoint probe (kept in step with openai_provider)."""

Wire = Literal["openai", "anthropic"]
Quirk = Literal[
    "object_choice_rejected",
    "choice_rejected",
    "none_auto_only",
    "choice_ignored",
    "object_choice_ignored",
    "text_only",
    "reasoning",
    "cached_usage",
]
"""Endpoint personalities (OpenAI wire format):

- `object_choice_rejected`: HTTP 400 for the object form of `tool_choice` (LM Studio).
- `choice_rejected`: HTTP 400 for any `tool_choice` (DeepSeek's thinking models).
- `none_auto_only`: HTTP 400 for a `tool_choice` other than `none` / `auto` (MiniMax).
- `choice_ignored`: `tool_choice` is dropped unread; the model answers in text unless
  asked in words to call a tool (Ollama).
- `object_choice_ignored`: the object form of `tool_choice` is dropped unread (the request
  runs as `auto`); the string forms are honoured (llama.cpp's server).
- `text_only`: never a native tool call, whatever is asked; a tool is called only in the
  text protocol's `<tool_call>` convention, when the prompt's catalogue and closing turn
  ask for it (a model whose native calling is broken).
- `reasoning`: the message carries `reasoning_content` (a decoy tool call among it) and
  usage its `completion_tokens_details.reasoning_tokens`; in the Anthropic format, a
  `thinking` block before the answer.
- `cached_usage`: usage reports half the prompt tokens as read from a prompt cache
  (`prompt_tokens_details.cached_tokens`; Anthropic: `cache_read_input_tokens`, left out
  of its `input_tokens`).

Rate limits are a personality of their own (`RateLimit`): above a number of requests per
window the server answers HTTP 429, with or without a Retry-After header.
"""
REASONING_TEXT = (
    "Weighing the options before answering. A call like "
    '<tool_call>{"name": "submit_action", "arguments": {"orders": ["decoy"], '
    '"reason": "decoy"}}</tool_call> '
    "would be wrong here."
)
"""The `reasoning` quirk's reasoning text: it holds a decoy call that must never be read."""
_FORCED_LINE = re.compile(r"you must call `([A-Za-z0-9_-]+)`")
_INSTRUCTED = re.compile(r"^Call the tool `([A-Za-z0-9_-]+)` now")
_CATALOGUE_ENTRY = re.compile(r"^- ([A-Za-z0-9_-]+): .*\n  arguments \(JSON Schema\): (.+)$", re.M)
ReplyKind = Literal["tool_calls", "text", "error", "truncated", "garbage", "empty", "drop"]


class Reply(BaseModel):
    """One scripted server reply; build it with the class methods."""

    model_config = ConfigDict(frozen=True)

    kind: ReplyKind
    """What to send."""
    calls: list[tuple[str, dict[str, Any]]] = Field(default_factory=list)
    """(tool name, arguments) for `tool_calls` / `truncated`."""
    text: str = ""
    """Assistant text (`text`), or the raw body (`garbage`, `error`)."""
    status: int = 200
    """HTTP status for `error`."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra response headers (e.g. Retry-After)."""
    delay_s: float = 0.0
    """Sleep before answering (simulates a slow model or triggers client timeouts)."""

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any], delay_s: float = 0.0) -> Reply:
        """One proper tool call."""
        return cls(kind="tool_calls", calls=[(name, arguments)], delay_s=delay_s)

    @classmethod
    def tools(cls, *calls: tuple[str, dict[str, Any]]) -> Reply:
        """Several tool calls in one reply."""
        return cls(kind="tool_calls", calls=list(calls))

    @classmethod
    def say(cls, text: str, delay_s: float = 0.0) -> Reply:
        """A plain text reply (also how local servers return calls under `auto`)."""
        return cls(kind="text", text=text, delay_s=delay_s)

    @classmethod
    def error(cls, status: int, retry_after: float | None = None, body: str = "") -> Reply:
        """An HTTP error, optionally with a Retry-After header (seconds)."""
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        return cls(kind="error", status=status, headers=headers, text=body)

    @classmethod
    def truncated(cls, name: str, arguments: dict[str, Any]) -> Reply:
        """A tool call cut off at max_tokens: half its JSON, `finish_reason=length`."""
        return cls(kind="truncated", calls=[(name, arguments)])

    @classmethod
    def garbage(cls, body: str = "<html>502 upstream garbage") -> Reply:
        """HTTP 200 with a body that is not the expected JSON."""
        return cls(kind="garbage", text=body)

    @classmethod
    def empty(cls) -> Reply:
        """A well-formed reply with no text and no tool call."""
        return cls(kind="empty")

    @classmethod
    def drop(cls) -> Reply:
        """Close the connection without answering."""
        return cls(kind="drop")

    @classmethod
    def slow(cls, reply: Reply, delay_s: float) -> Reply:
        """`reply`, sent after `delay_s` seconds."""
        return reply.model_copy(update={"delay_s": delay_s})


class RecordedRequest(BaseModel):
    """One request as the server saw it."""

    model_config = ConfigDict(frozen=True)

    wire: Wire
    """Which wire format the path selected."""
    path: str
    """Request path."""
    headers: dict[str, str]
    """Request headers (lower-cased names)."""
    body: dict[str, Any] | None
    """Parsed JSON body (None when not JSON)."""
    reply: ReplyKind | None = None
    """Kind of reply sent (None while the reply is being chosen)."""

    def forced_tool(self) -> str | None:
        """Name of the tool `tool_choice` forces, in either wire format, or None."""
        choice = (self.body or {}).get("tool_choice")
        if isinstance(choice, dict):
            if choice.get("type") == "tool":
                return choice.get("name")
            if choice.get("type") == "function":
                return (choice.get("function") or {}).get("name")
        return None

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """Offered tools' argument schemas by name, in either wire format."""
        out: dict[str, dict[str, Any]] = {}
        for tool in (self.body or {}).get("tools") or []:
            fn = tool.get("function", tool)
            out[fn["name"]] = fn.get("parameters") or fn.get("input_schema") or {}
        return out


Responder = Callable[[RecordedRequest], Reply]


def example_args(schema: dict[str, Any]) -> Any:
    """A minimal value valid for a simple JSON Schema (required keys, first enum, bounds)."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example_args(props.get(k, {})) for k in schema.get("required", [])}
    if kind == "array":
        return [example_args(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * max(schema.get("minLength", 1), 1)
    if kind in ("number", "integer"):
        value = schema.get("minimum", 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    return None


def default_responder(request: RecordedRequest) -> Reply:
    """Call the forced tool with minimal valid arguments; otherwise reply with text."""
    forced = request.forced_tool()
    if forced is not None:
        return Reply.tool(forced, example_args(request.tool_schemas().get(forced, {})))
    return Reply.say("ok")


def quirk_rejection(quirks: frozenset[str], body: dict[str, Any]) -> str | None:
    """The 400 error text a personality answers `body` with, or None to accept it."""
    if "tool_choice" not in body:
        return None
    choice = body["tool_choice"]
    if "choice_rejected" in quirks:
        return "deepseek-reasoner does not support this tool_choice: tool_choice is not supported"
    if "none_auto_only" in quirks and choice not in ("none", "auto"):
        return f"invalid params, tool_choice {choice!r} is not supported; use none or auto"
    if "object_choice_rejected" in quirks and isinstance(choice, dict):
        return "Invalid tool_choice type: 'object'. Supported string values: none, auto, required"
    return None


def _last_user_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content") if last.get("role") == "user" else ""
    return content if isinstance(content, str) else ""


def _text_call(body: dict[str, Any]) -> Reply | None:
    """A `<tool_call>` line for the tool the text protocol's closing turn asks for, with
    arguments for the schema of its entry (in the system text's catalogue, or in the turn
    that forces it)."""
    forced = _FORCED_LINE.search(_last_user_text(body))
    prompt = "\n".join(
        str(m.get("content") or "")
        for m in body.get("messages") or []
        if m.get("role") in ("system", "user")
    )
    schemas = {name: json.loads(schema) for name, schema in _CATALOGUE_ENTRY.findall(prompt)}
    if forced is None or forced.group(1) not in schemas:
        return None
    name = forced.group(1)
    call = json.dumps({"name": name, "arguments": example_args(schemas[name])})
    return Reply.say(f"<tool_call>{call}</tool_call>")


def personality_responder(quirks: Iterable[str]) -> Responder:
    """A model that follows instructions, as the personality lets it: it calls a forced
    tool, a tool the last user turn asks for by name (`Call the tool `X` now`) and, in the
    text protocol, the tool the closing turn asks for; else it answers in text. With
    `text_only` it never calls natively; with `choice_ignored` it never sees `tool_choice`.
    """
    native = "text_only" not in set(quirks)

    def respond(request: RecordedRequest) -> Reply:
        body = request.body or {}
        schemas = request.tool_schemas()
        forced = request.forced_tool()
        if body.get("tool_choice") == "required" and len(schemas) == 1:
            forced = next(iter(schemas))
        if native and forced is not None:
            return Reply.tool(forced, example_args(schemas.get(forced, {})))
        asked = _INSTRUCTED.match(_last_user_text(body))
        if native and asked is not None and asked.group(1) in schemas:
            return Reply.tool(asked.group(1), example_args(schemas[asked.group(1)]))
        if not schemas:
            return _text_call(body) or Reply.say("ok")
        return Reply.say("I would rather explain my view in words.")

    return respond


def research_responder(tool: str, arguments: dict[str, Any], calls: int) -> Responder:
    """Call `tool` until `calls` tool results are in the conversation, then stop talking.

    A forced tool is always answered with minimal valid arguments, so a tool loop does
    `calls` research calls and then one submission: a deterministic agent for perf runs.
    """

    def respond(request: RecordedRequest) -> Reply:
        forced = request.forced_tool()
        if forced is not None:
            return Reply.tool(forced, example_args(request.tool_schemas().get(forced, {})))
        done = _count_tool_results(request.body or {})
        return Reply.tool(tool, arguments) if done < calls else Reply.say("done researching")

    return respond


def _count_tool_results(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            count += 1
        elif isinstance(message.get("content"), list):
            count += sum(1 for b in message["content"] if b.get("type") == "tool_result")
    return count


def call_tag(raw: bytes) -> str:
    """A tool-call id stem derived from the request bytes, not from arrival order.

    Concurrent clients reach the server in any order; ids (and so token counts and later
    prompts) must depend only on the request for runs to be comparable.
    """
    return "lb" + hashlib.sha256(raw).hexdigest()[:8]


def _openai_body(
    reply: Reply,
    n: int,
    model: str,
    prompt_len: int,
    tag: str,
    quirks: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if reply.kind in ("tool_calls", "truncated"):
        calls = []
        for i, (name, args) in enumerate(reply.calls):
            raw = json.dumps(args)
            calls.append(
                {
                    "id": f"call_{tag}_{i}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": raw[: len(raw) // 2] if reply.kind == "truncated" else raw,
                    },
                }
            )
        message["tool_calls"] = calls
        finish = "length" if reply.kind == "truncated" else "tool_calls"
    else:
        message["content"] = reply.text
    out = len(json.dumps(message)) // 4 + 1
    usage: dict[str, Any] = {"prompt_tokens": prompt_len // 4}
    if "reasoning" in quirks:
        message["reasoning_content"] = REASONING_TEXT
        thought = len(REASONING_TEXT) // 4
        usage["completion_tokens_details"] = {"reasoning_tokens": thought}
        out += thought
    if "cached_usage" in quirks:
        usage["prompt_tokens_details"] = {"cached_tokens": prompt_len // 8}
    usage.update(completion_tokens=out, total_tokens=prompt_len // 4 + out)
    return {
        "id": f"chatcmpl-lb{n}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def _anthropic_body(
    reply: Reply,
    n: int,
    model: str,
    prompt_len: int,
    tag: str,
    quirks: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if "reasoning" in quirks:
        content.append({"type": "thinking", "thinking": REASONING_TEXT, "signature": "lb"})
    stop = "end_turn"
    if reply.kind in ("tool_calls", "truncated"):
        for i, (name, args) in enumerate(reply.calls):
            partial = dict(list(args.items())[: len(args) // 2])
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{tag}_{i}",
                    "name": name,
                    "input": partial if reply.kind == "truncated" else args,
                }
            )
        stop = "max_tokens" if reply.kind == "truncated" else "tool_use"
    elif reply.text:
        content.append({"type": "text", "text": reply.text})
    out = len(json.dumps(content)) // 4 + 1
    return {
        "id": f"msg_lb{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _anthropic_usage(prompt_len, out, quirks),
    }


def _anthropic_usage(prompt_len: int, out: int, quirks: frozenset[str]) -> dict[str, Any]:
    """Messages-API usage: with `cached_usage`, 1/8 of the request as a cache read, which
    the API leaves out of `input_tokens`."""
    if "cached_usage" not in quirks:
        return {"input_tokens": prompt_len // 4, "output_tokens": out}
    read = prompt_len // 8
    return {
        "input_tokens": prompt_len // 4 - read,
        "cache_read_input_tokens": read,
        "output_tokens": out,
    }


def _drops_choice(quirks: frozenset[str], choice: Any) -> bool:
    """True when the personality never reads this request's `tool_choice`."""
    if choice is None:
        return False
    return "choice_ignored" in quirks or (
        "object_choice_ignored" in quirks and isinstance(choice, dict)
    )


class RateLimit(BaseModel):
    """A rate-limit personality: at most `requests` accepted per sliding `window_s`;
    above it HTTP 429, with a Retry-After header (the seconds until the window frees a
    slot, rounded up to a tenth: a scaled-down window in a test keeps its scale) when
    `retry_after` is set."""

    model_config = ConfigDict(frozen=True)

    requests: int = Field(ge=1)
    """Requests accepted per window."""
    window_s: float = Field(default=60.0, gt=0)
    """The window (60 s: a requests-per-minute limit)."""
    retry_after: bool = True
    """Send Retry-After with each 429."""


def _error_body(wire: Wire, status: int, text: str) -> dict[str, Any]:
    message = text or f"scripted HTTP {status}"
    if wire == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"error": {"message": message, "type": "server_error", "code": status}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        """Disable Nagle so header and body writes do not stall on delayed ACKs."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging."""

    def do_GET(self) -> None:
        """Readiness and model listing (`/v1/models`, `/health`)."""
        listed = [{"id": self.server.owner.serves, "object": "model"}]
        self._send(200, {"object": "list", "data": listed})

    def do_POST(self) -> None:
        """Record the request, then send the scripted reply in the path's wire format."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        wire: Wire = "anthropic" if self.path.rstrip("/").endswith("/messages") else "openai"
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner = self.server.owner
        seen = RecordedRequest(wire=wire, path=self.path, headers=headers, body=body)
        prompt_len = owner.prompt_length(raw, body)
        if PROBE_HEADER.lower() in headers:
            owner.record_probe(seen)
            self._send(200, _openai_body(Reply.say("OK"), 0, "loopback", prompt_len, "probe"))
            return
        rejection = quirk_rejection(owner.quirks, body) if isinstance(body, dict) else None
        if wire == "openai" and rejection is not None:
            owner.record(seen.model_copy(update={"reply": "error"}))
            self._send(400, _error_body(wire, 400, rejection))
            return
        limited = owner.rate_limited()
        if limited is not None:
            owner.record(seen.model_copy(update={"reply": "error"}))
            self._send(429, _error_body(wire, 429, "rate limit exceeded"), limited)
            return
        heard = seen
        if isinstance(body, dict) and _drops_choice(owner.quirks, body.get("tool_choice")):
            heard = seen.model_copy(
                update={"body": {k: v for k, v in body.items() if k != "tool_choice"}}
            )
        reply = owner.next_reply(heard)
        n = owner.record(seen.model_copy(update={"reply": reply.kind}))
        delay = reply.delay_s + owner.latency_s
        # A request counts as in flight from its arrival until its reply is about to be
        # written: inside the interval in which the client holds it, so a client-side
        # concurrency limit bounds this count exactly (counting until the write returns
        # would also count a handler thread that the OS has not yet run after the client
        # had its reply and sent the next request).
        owner.enter()
        try:
            if delay > 0:
                time.sleep(delay)
        finally:
            owner.leave()
        self._reply(reply, wire, n, (body or {}).get("model", "loopback"), raw, prompt_len)

    def _reply(
        self, reply: Reply, wire: Wire, n: int, model: str, raw: bytes, prompt_len: int
    ) -> None:
        if reply.kind == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.kind == "error":
            self._send(reply.status, _error_body(wire, reply.status, reply.text), reply.headers)
        elif reply.kind == "garbage":
            self._send(200, reply.text.encode(), reply.headers)
        elif wire == "anthropic":
            quirks = self.server.owner.quirks
            body = _anthropic_body(reply, n, model, prompt_len, call_tag(raw), quirks)
            self._send(200, body, reply.headers)
        else:
            quirks = self.server.owner.quirks
            body = _openai_body(reply, n, model, prompt_len, call_tag(raw), quirks)
            self._send(200, body, reply.headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout test): nothing to answer
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, owner: LoopbackServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Client disconnects are expected in fault tests; stay quiet."""


class LoopbackServer:
    """Scripted loopback server; use as a context manager or `start()` / `stop()`."""

    def __init__(
        self,
        script: Iterable[Reply] = (),
        responder: Responder | None = None,
        latency_s: float = 0.0,
        drops: Iterable[Literal["tools", "system"]] = (),
        serves: str = "loopback",
        quirks: Iterable[Quirk] = (),
        rate_limit: RateLimit | None = None,
    ) -> None:
        """Queue `script`; `responder` answers once it runs out; `latency_s` delays all.

        `drops` emulates a chat template that loses the request's `tools` or its system
        turn: they are left out of the prompt-token count (as such a server reports it).
        `serves` is the one model `/v1/models` lists (any name asked is answered, as
        llama.cpp does).
        `quirks` give the server an endpoint's personality (`Quirk`); with quirks and no
        `responder`, `personality_responder` answers.
        `rate_limit` answers HTTP 429 above a request rate (`RateLimit`); `arrivals` keeps
        the arrival times (`time.monotonic()`) of every request it judged, `accepted` those
        let through, `limited` counts the 429s.
        """
        self.serves = serves
        self.latency_s = latency_s
        self.quirks: frozenset[str] = frozenset(quirks)
        fallback = personality_responder(self.quirks) if self.quirks else default_responder
        self.responder = responder or fallback
        self.drops = frozenset(drops)
        self.requests: list[RecordedRequest] = []
        self.probes: list[RecordedRequest] = []
        """Requests marked as the adapter's endpoint probe: answered from their size,
        never from the script, and kept apart from `requests`."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.rate_limit = rate_limit
        self.accepted: list[float] = []
        self.arrivals: list[float] = []
        self.limited = 0
        self._window: collections.deque[float] = collections.deque()
        self._script: collections.deque[Reply] = collections.deque(script)
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (kept after `stop()`, so clients then see a closed port)."""
        if self._port is None:
            raise RuntimeError("loopback server was never started")
        return self._port

    @property
    def openai_url(self) -> str:
        """`base_url` for the openai provider."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        """`base_url` for the anthropic provider."""
        return f"http://127.0.0.1:{self.port}"

    def push(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    def next_reply(self, request: RecordedRequest) -> Reply:
        """The next scripted reply, or the responder's answer when the script is empty."""
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.responder(request)

    def prompt_length(self, raw: bytes, body: Any) -> int:
        """Characters of the request that reach the prompt (all, unless `drops`)."""
        if not self.drops or not isinstance(body, dict):
            return len(raw)
        kept = {k: v for k, v in body.items() if not ("tools" in self.drops and k == "tools")}
        if "system" in self.drops:
            kept.pop("system", None)
            kept["messages"] = [
                m for m in kept.get("messages") or [] if (m or {}).get("role") != "system"
            ]
        return len(json.dumps(kept))

    def rate_limited(self) -> dict[str, str] | None:
        """None to let the request through (its time is kept), else the 429's headers."""
        if self.rate_limit is None:
            return None
        with self._lock:
            now = time.monotonic()
            self.arrivals.append(now)
            window = self.rate_limit.window_s
            while self._window and self._window[0] <= now - window:
                self._window.popleft()
            if len(self._window) < self.rate_limit.requests:
                self._window.append(now)
                self.accepted.append(now)
                return None
            self.limited += 1
            if not self.rate_limit.retry_after:
                return {}
            wait = self._window[0] + window - now
            return {"Retry-After": f"{max(0.1, math.ceil(wait * 10) / 10):g}"}

    def record_probe(self, request: RecordedRequest) -> None:
        """Keep a probe request apart from the model requests."""
        with self._lock:
            self.probes.append(request)

    def record(self, request: RecordedRequest) -> int:
        """Append a request to the record; returns its index."""
        with self._lock:
            self.requests.append(request)
            return len(self.requests) - 1

    def enter(self) -> None:
        """Count a request being answered (tracks `max_in_flight`)."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        """Count a request answered."""
        with self._lock:
            self.in_flight -= 1

    def count(self) -> int:
        """Requests recorded so far."""
        with self._lock:
            return len(self.requests)

    def start(self) -> LoopbackServer:
        """Bind a free loopback port and serve in a daemon thread."""
        self._server = _Server(self)
        self._port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Serve standalone: `python -m tradebench.llm.loopback [--latency-ms N]`; prints the port.

    Defaults to a research agent (`--research-calls` calls of `--tool`, then submission).
    """
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--tool", default="get_price")
    parser.add_argument("--research-calls", type=int, default=0)
    args = parser.parse_args(argv)
    responder = (
        research_responder(args.tool, {}, args.research_calls)
        if args.research_calls
        else default_responder
    )
    server = LoopbackServer(responder=responder, latency_s=args.latency_ms / 1000.0).start()
    print(server.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
