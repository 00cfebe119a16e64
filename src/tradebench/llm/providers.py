"""The provider registry: wire formats by name, each an adapter class imported on first use.

`ModelConfig.provider` must name one of them. The built-in providers are registered below by
path, so a missing SDK fails with an install hint for that provider alone; an installed
package adds its own through the `tradebench.providers` entry-point group (the entry is an
adapter class or factory called as `Adapter(config, limiter=..., retry=..., [replay=True])`
that returns a `ChatModel`), and code adds one with the `provider` decorator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tradebench.registry import Registry

AdapterFactory = Callable[..., Any]
"""Builds a `ChatModel` from `(config, limiter=..., retry=..., [replay=True])`."""

PROVIDERS: Registry[Any] = Registry("provider", group="tradebench.providers")
PROVIDERS.register("openai", "tradebench.llm.openai_provider:OpenAIChatModel")
PROVIDERS.register("anthropic", "tradebench.llm.anthropic_provider:AnthropicChatModel")


def provider(name: str) -> Callable[[AdapterFactory], AdapterFactory]:
    """Decorator: register an adapter class (or factory) as provider `name`.

    Raises:
        ConfigError: `name` is already a provider.
    """
    return PROVIDERS.register(name)


def registered_providers() -> list[str]:
    """Names of every provider (built-in and installed), sorted."""
    return PROVIDERS.names()


def check_provider(name: str) -> str:
    """`name` when it is a known provider (nothing is imported).

    Raises:
        ValueError: Unknown provider (the known ones are listed).
    """
    if not PROVIDERS.has(name):
        raise ValueError(PROVIDERS.unknown(name))
    return name
