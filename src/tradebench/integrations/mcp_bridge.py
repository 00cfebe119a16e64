"""An outside client in the model's seat: each of its tool calls is one model reply.

`ClientDrivenModel` is a `ChatModel` for the episode served over MCP. The portfolio agent
runs its normal tool loop against it (prompts, masks, tools, validation, retries, trace), and
each time the loop asks the model for its next reply, the model hands the conversation's new
messages to the client call that is waiting for them and waits for the client's next tool
call, which becomes the reply. The day loop, the tools and their feedback are the native
run's own; this module only moves messages between the two sides, in one event loop.

What a client call receives is what the native model would have read next: the tool's
result (or the loop's feedback), any user turn the loop added, and, when the call closed the
day, the next day's observation (the system prompt only the first time it is sent).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tradebench.llm.types import (
    ChatResponse,
    Message,
    ModelConfig,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)

SUBMIT = "submit_action"
"""The portfolio benchmark's submit tool (`benchmarks.portfolio.tools.submit_tool`)."""
JSON_ANSWER = "none"
"""The `tool_choice` of the JSON answer form (`agents.json_answer`): no tools offered; a
client's `submit_action` arguments become the reply's JSON text."""


@dataclass(frozen=True)
class Delivery:
    """What a client call gets back: the messages the conversation gained since the call,
    where the episode stands, and whether the call was refused before reaching the loop."""

    messages: list[Message]
    step: int
    """1-based decision day the next call acts on (the last day once finished)."""
    total: int
    phase: str
    """`research` (any tool), `submit` (only `submit_action`) or `finished`."""
    new_day: bool = False
    finished: bool = False
    refused: str | None = None
    """Why the call never reached the loop (another tool under the JSON answer form, an
    episode that is over or stopped); None when the loop answered it."""


@dataclass
class _Pending:
    name: str
    arguments: dict[str, Any]
    answer: asyncio.Future[Delivery]


def _settle(pending: _Pending, delivery: Delivery) -> None:
    """Answer a client call (unless its client already gave up on it)."""
    if not pending.answer.done():
        pending.answer.set_result(delivery)


@dataclass
class ClientDrivenModel:
    """A `ChatModel` whose replies are an outside client's tool calls (see module doc).

    Attributes:
        config: The spec's model entry (its `max_tokens` bounds the reasons, as natively).
        step: 1-based day of the next decision (set from the journal on resume).
        total: Decision days of the episode.
    """

    config: ModelConfig
    step: int
    total: int
    _queue: asyncio.Queue[_Pending] = field(default_factory=asyncio.Queue)
    _waiting: _Pending | None = None
    _reply_index: int | None = None
    """Where the last reply sits in the loop's conversation (None: a new day begins)."""
    _closing: list[Message] = field(default_factory=list)
    """The messages that closed the last day (the accepted submission's result, or the
    last refusal before the fallback), read from its trace."""
    _system_sent: str | None = None
    _conversation: list[Message] = field(default_factory=list)
    _choice: ToolChoice = "auto"
    _offered: list[ToolSpec] = field(default_factory=list)
    _replies: int = 0
    _answered_at: float = field(default_factory=time.monotonic)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _final: Delivery | None = None

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """Hand the new messages to the waiting client call; return its next call as the
        reply (see `ChatModel.generate`)."""
        new_day = self._reply_index is None
        news = list(messages) if new_day else list(messages[self._reply_index + 1 :])
        self._conversation = list(messages)
        self._choice, self._offered = tool_choice, list(tools)
        self._answer(self._delivery(self._closing + news, new_day))
        self._closing = []
        self._ready.set()
        pending = await self._next_call()
        self._waiting = pending
        self._reply_index = len(messages)
        latency = time.monotonic() - self._answered_at
        return ChatResponse(
            message=self._reply(pending),
            usage=Usage(),
            finish_reason="stop" if tool_choice == JSON_ANSWER else "tool_calls",
            latency_s=latency,
        )

    async def _next_call(self) -> _Pending:
        """The client's next call that reaches the loop (another tool under the JSON answer
        form is refused here: a native model there can only answer)."""
        while True:
            pending = await self._queue.get()
            if self._choice != JSON_ANSWER or pending.name == SUBMIT:
                return pending
            text = f"only `{SUBMIT}` can be called now: today's decision is one answer"
            _settle(pending, self._delivery([], False, refused=text))

    def _reply(self, pending: _Pending) -> Message:
        raw = json.dumps(pending.arguments, ensure_ascii=False)
        if self._choice == JSON_ANSWER:
            return Message(role="assistant", content=raw)
        self._replies += 1
        call = ToolCall(
            id=f"call_{self._replies}",
            name=pending.name,
            arguments=pending.arguments,
            raw_arguments=raw,
        )
        return Message(role="assistant", tool_calls=[call])

    def day_closed(self, index: int, trace: dict[str, Any] | None) -> None:
        """The engine journaled day `index` (0-based): keep what followed the last reply
        (for the call that closed it) and start a new conversation next time."""
        if trace is not None and self._reply_index is not None:
            rest = trace.get("messages", [])[self._reply_index + 1 :]
            self._closing = [Message.model_validate(m) for m in rest]
        self._reply_index = None
        self.step = index + 2

    def _delivery(
        self, messages: list[Message], new_day: bool, refused: str | None = None
    ) -> Delivery:
        shown = [m for m in messages if m.role != "assistant" and not self._seen_system(m)]
        phase = "research" if self._choice == "auto" else "submit"
        step = min(self.step, self.total)
        return Delivery(shown, step, self.total, phase, new_day=new_day, refused=refused)

    def _seen_system(self, message: Message) -> bool:
        """True for a system prompt already sent (it is the same every day)."""
        if message.role != "system":
            return False
        seen = message.content == self._system_sent
        self._system_sent = message.content
        return seen

    def _answer(self, delivery: Delivery) -> None:
        if self._waiting is not None:
            _settle(self._waiting, delivery)
        self._waiting = None
        self._answered_at = time.monotonic()

    async def call(self, name: str, arguments: dict[str, Any]) -> Delivery:
        """The client calls tool `name`: wait until the loop has answered it."""
        if self._final is not None:
            return self._final
        answer: asyncio.Future[Delivery] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(name, dict(arguments), answer))
        return await answer

    async def observation(self) -> Delivery:
        """The current day's conversation as the native model sees it (system prompt
        included), without acting; waits for the first day."""
        await self._ready.wait()
        if self._final is not None:
            return self._final
        shown = [m for m in self._conversation if m.role != "assistant"]
        phase = "research" if self._choice == "auto" else "submit"
        return Delivery(shown, min(self.step, self.total), self.total, phase)

    def finish(self, text: str, stopped: bool = False) -> None:
        """The episode is over (or stopped on an error, `stopped`): answer the waiting call
        with the closing messages and `text`, and every later call with `text`."""
        note = Message(role="user", content=text)
        final = Delivery(
            [note],
            min(self.step, self.total),
            self.total,
            "finished",
            finished=True,
            refused=text if stopped else None,
        )
        closing = Delivery(
            [*self._closing, note],
            final.step,
            final.total,
            "finished",
            finished=True,
            refused=final.refused,
        )
        self._final = final
        self._answer(closing)
        while not self._queue.empty():
            _settle(self._queue.get_nowait(), final)
        self._ready.set()

    @property
    def finished(self) -> bool:
        """Whether the episode is over (or stopped)."""
        return self._final is not None

    @property
    def offered_tools(self) -> list[ToolSpec]:
        """The tools the loop offered in its last request (the research tools, or the
        submit tool when it is forced)."""
        return list(self._offered)

    async def wait_ready(self) -> None:
        """Return once the first day's conversation exists (or the episode ended)."""
        await self._ready.wait()
