"""`toy_plugin_fixed`: a provider that needs no endpoint. Its model name is its answer:
`toy_plugin_fixed:invest` always says `invest`, `toy_plugin_fixed:cash` always `cash`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tradebench.llm.types import ChatResponse, Message, ModelConfig, ToolChoice, ToolSpec, Usage


class FixedAnswerModel:
    """A `ChatModel` that answers every conversation with its model name."""

    def __init__(self, config: ModelConfig, **transport: Any) -> None:
        """Built by tradebench as `Adapter(config, limiter=..., retry=..., [replay=True])`;
        the transport settings do not apply to an answer computed here."""
        self.config = config

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """Reply with the model name; one token in per word of the conversation, one out."""
        words = sum(len(m.content.split()) for m in messages)
        return ChatResponse(
            message=Message(role="assistant", content=self.config.model),
            usage=Usage(input_tokens=words, output_tokens=1),
            finish_reason="stop",
            latency_s=0.0,
        )
