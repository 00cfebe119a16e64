"""One generic registry for every pluggable kind (agents, providers, benchmarks).

A registered factory is stored under a name; building through the registry records the
name and the arguments, so a run record can store and rebuild exactly what ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tradebench.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class Spec:
    """What was built: a registered name and its arguments (JSON-able)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Registry(Generic[T]):
    """Named factories of one kind."""

    kind: str
    factories: dict[str, Callable[..., T]] = field(default_factory=dict)

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator: register a factory under `name` (names are unique per kind)."""

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self.factories:
                raise ConfigError(f"{self.kind} {name!r} is registered twice")
            self.factories[name] = factory
            return factory

        return deco

    def build(self, name: str, **args: Any) -> tuple[T, Spec]:
        """Build `name` with `args`; returns the object and its `Spec` for the run record."""
        if name not in self.factories:
            known = ", ".join(sorted(self.factories)) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known}")
        try:
            obj = self.factories[name](**args)
        except TypeError as exc:
            raise ConfigError(f"bad arguments for {self.kind} {name!r}: {exc}") from None
        return obj, Spec(name=name, args=dict(args))

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self.factories)
