"""The `ChatModel` protocol and `get_model`, the one entry point (providers are looked up
in `llm.providers.PROVIDERS`, the registry of wire formats).

`get_model` composes the layers every run wants, innermost first:

    adapter (SDK call, rate limits, retries)  ->  budget (caps real spend)  ->  cache

so a cache hit is free and never touches the budget or the endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from tradebench.llm.budget import Budget, BudgetedModel
from tradebench.llm.cache import CachedModel, ResponseCache
from tradebench.llm.limits import Limits, RateLimiter
from tradebench.llm.providers import PROVIDERS, provider, registered_providers
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ChatResponse, Message, ModelConfig, ToolChoice, ToolSpec


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns a conversation into one normalised reply."""

    config: ModelConfig

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """Return the model's next message.

        Args:
            messages: The conversation so far.
            tools: Tools the model may call.
            tool_choice: `auto`, `none`, `required` or the name of the tool to force.
            sample_index: Which sample of this exact request (part of the cache key), so
                repeated samples at temperature > 0 are cached separately.

        Raises:
            ProviderError: The endpoint failed after every retry.
            BudgetExceeded: A token or cost cap was already reached.
            CacheMiss: Replay mode and no cached reply.
        """
        ...


__all__ = ["ChatModel", "get_model", "provider", "registered_providers"]


def get_model(
    config: ModelConfig | str,
    *,
    cache: ResponseCache | None = None,
    budget: Budget | None = None,
    limits: Limits | RateLimiter | None = None,
    retry: RetryPolicy | None = None,
) -> ChatModel:
    """Build a ready-to-use model: adapter, then budget, then cache.

    Args:
        config: A `ModelConfig` or CLI shorthand such as `openai:gpt-4.1-mini`.
        cache: Response cache (its mode decides readwrite / replay / off); None = no cache.
        budget: Shared token/cost budget for the run; None = unbounded.
        limits: Per-endpoint limits, or a `RateLimiter` to share one endpoint's limits
            between several models; None = no limits.
        retry: Retry policy for transient faults; None = the default policy.

    Raises:
        ConfigError: Unknown provider, bad shorthand, or a missing API key variable (not
            needed, and not read, when `cache` only replays).
    """
    cfg = ModelConfig.parse(config) if isinstance(config, str) else config
    adapter = PROVIDERS.get(cfg.provider)
    limiter = RateLimiter(limits) if isinstance(limits, Limits) else limits
    replay = {"replay": True} if cache is not None and cache.mode == "replay" else {}
    model: ChatModel = adapter(cfg, limiter=limiter, retry=retry or RetryPolicy(), **replay)
    if budget is not None:
        model = BudgetedModel(model, budget)
    if cache is not None:
        model = CachedModel(model, cache)
    return model
