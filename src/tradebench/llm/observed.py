"""A model layer that reports every reply to a listener (progress displays, counters)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tradebench.llm.base import ChatModel
from tradebench.llm.types import ChatResponse, Message, ToolChoice, ToolSpec


class ObservedModel:
    """Passes calls through to `inner` and hands each reply to `on_reply`."""

    def __init__(self, inner: ChatModel, on_reply: Callable[[ChatResponse], None]) -> None:
        """Wrap `inner`; `on_reply` is called after every reply, hits included."""
        self.inner = inner
        self.config = inner.config
        self.on_reply = on_reply

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """The inner model's reply, reported first; see `ChatModel.generate`."""
        reply = await self.inner.generate(messages, tools, tool_choice, sample_index)
        self.on_reply(reply)
        return reply
