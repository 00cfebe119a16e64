"""Our `ChatModel` protocol over an inspect_ai model, and the conversations it carried.

`InspectChatModel` lets a benchmark's own agent (its prompts, masking, tool loop and
broker) run with inspect driving the model: every call goes through inspect's
`Model.generate`, so inspect's provider, retries, limits and transcript (one model event
per call, with the tools offered) apply. It also keeps each conversation as the model saw
it (masked, since masking happens before any message is built), to become the sample's
transcript of messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from inspect_ai.model import ChatMessage, GenerateConfig, Model

from tradebench.integrations.inspect_messages import (
    from_inspect_output,
    to_inspect_choice,
    to_inspect_messages,
    to_inspect_tool,
)
from tradebench.llm.types import ChatResponse, Message, ModelConfig, ToolChoice, ToolSpec


@dataclass
class Conversations:
    """The distinct conversations of a sequence of model calls, in order.

    A call whose input extends the previous call's input continues that conversation
    (a tool loop's turns); any other call starts a new one (the next decision day).
    """

    finished: list[list[Message]] = field(default_factory=list)
    _input: list[Message] = field(default_factory=list)
    _reply: Message | None = None

    def add(self, messages: Sequence[Message], reply: Message) -> None:
        """Record one call: its input and the reply it got."""
        given = list(messages)
        continues = len(given) >= len(self._input) and given[: len(self._input)] == self._input
        if self._reply is not None and not continues:
            self.finished.append([*self._input, self._reply])
        self._input, self._reply = given, reply

    def all(self) -> list[list[Message]]:
        """Every conversation so far, the open one last (each ends with its last reply)."""
        tail = [[*self._input, self._reply]] if self._reply is not None else []
        return [*self.finished, *tail]

    def messages(self) -> list[Message]:
        """All conversations one after another: the transcript of the episode."""
        return [m for conversation in self.all() for m in conversation]


class InspectChatModel:
    """A `ChatModel` whose replies come from an inspect model."""

    def __init__(self, model: Model, config: ModelConfig) -> None:
        """Wrap `model`; `config` is what our records say about it (name, sampling)."""
        self.model = model
        self.config = config
        self.conversations = Conversations()

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """One reply from inspect's model; `sample_index` is sent as the sampling seed,
        as our own adapters do, so each seed of a grid is its own sample."""
        output = await self.model.generate(
            to_inspect_messages(messages),
            tools=[to_inspect_tool(t) for t in tools],
            tool_choice=to_inspect_choice(tool_choice) if tools else None,
            config=GenerateConfig(seed=sample_index),
        )
        response = from_inspect_output(output)
        self.conversations.add(messages, response.message)
        return response

    def transcript(self) -> list[ChatMessage]:
        """The masked conversations of every call so far, in inspect's types."""
        return to_inspect_messages(self.conversations.messages())


def model_config_for(model: Model, max_tokens: int | None = None) -> ModelConfig:
    """What our records say about an inspect model: its full inspect name (under the wire
    format it speaks: `anthropic` for inspect's Anthropic provider, `openai` otherwise) and,
    from its generate config, temperature and max tokens where set."""
    cfg = model.config
    return ModelConfig(
        provider="anthropic" if str(model).startswith("anthropic/") else "openai",
        model=str(model),
        temperature=cfg.temperature if cfg.temperature is not None else 0.0,
        max_tokens=cfg.max_tokens or max_tokens or 1024,
    )
