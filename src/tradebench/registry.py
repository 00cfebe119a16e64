"""The one registry for every pluggable kind: benchmarks, agents, providers (and any other).

A registry maps names to entries. An entry is the object itself (a benchmark instance, an
agent factory, a provider's adapter class) or its `module:attribute` path, imported on first
use so that naming a kind never loads what it does not use. Three sources fill a registry,
and a name may come from only one of them (a second one is refused with both named):

- built-in lines (`REGISTRY.register("name", "package.module:ATTR")`, or the decorator);
- Python entry points of the registry's group (`tradebench.benchmarks`, `tradebench.agents`,
  `tradebench.providers`), read once, lazily, on the first lookup (nothing is imported until
  an entry is used), so an installed package adds its own without touching this one;
- where the registry allows it, a `module:attribute` path used as the name itself (a spec's
  `agent: my_pkg.agents:MyAgent`), imported when asked for.

Building through the registry records the name and the arguments (`Spec`), so a run record
can store and rebuild exactly what ran. Mask levels are data rather than entries: one row of
`MASK_TABLE` in `masking.py` each (docs/architecture.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module, metadata
from typing import Any, Generic, TypeVar

from tradebench.errors import ConfigError

T = TypeVar("T")

_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
"""A `module:attribute` path (the attribute may be dotted: `pkg.mod:Class.factory`)."""


@dataclass(frozen=True)
class Spec:
    """What was built: a registered name and its arguments (JSON-able)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


def is_import_path(name: str) -> bool:
    """True when `name` reads as a `module:attribute` path rather than a registered name."""
    return bool(_PATH.match(name))


def import_path(path: str, kind: str = "object") -> Any:
    """The attribute a `module:attribute` path names, imported.

    Raises:
        ConfigError: The module cannot be imported or has no such attribute.
    """
    module_name, _, attribute = path.partition(":")
    try:
        obj: Any = import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"cannot import {kind} {path!r}: {exc} (install its package, or put its folder "
            "on PYTHONPATH)"
        ) from None
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"cannot import {kind} {path!r}: {module_name} has no {attribute!r}")
        obj = getattr(obj, part)
    return obj


@dataclass
class Registry(Generic[T]):
    """Named entries of one kind, from the code, from entry points and (optionally) by path.

    Attributes:
        kind: What the entries are, in messages (`agent`, `provider`, `benchmark`).
        group: The entry-point group read for installed packages' entries (None: none).
        paths: Whether a `module:attribute` path may stand for a name.
    """

    kind: str
    group: str | None = None
    paths: bool = False
    entries: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    _entry_points_read: bool = False

    def register(self, name: str, entry: Any = None, source: str = "") -> Any:
        """Register `entry` (an object or its `module:attribute` path) under `name`; called
        with the name alone, a decorator that registers what it decorates.

        Raises:
            ConfigError: `name` is already registered (both sources are named).
        """
        if entry is None:

            def deco(obj: Callable[..., T]) -> Callable[..., T]:
                self._add(name, obj, source or _where(obj))
                return obj

            return deco
        self._add(name, entry, source or (entry if isinstance(entry, str) else _where(entry)))
        return entry

    def _add(self, name: str, entry: Any, source: str) -> None:
        if name in self.entries:
            raise ConfigError(self._twice(name, self.sources[name], source))
        self.entries[name] = entry
        self.sources[name] = source

    def _twice(self, name: str, first: str, second: str) -> str:
        """The one-line message for a name that two sources register."""
        return (
            f"{self.kind} name {name!r} is registered twice: by {first} and by {second}; rename "
            "one of them (an installed package's entry point names it in its pyproject.toml)"
        )

    def unregister(self, name: str) -> None:
        """Remove `name` (a test's temporary entry); unknown names are ignored."""
        self.entries.pop(name, None)
        self.sources.pop(name, None)

    def _read_entry_points(self) -> None:
        """Add every entry point of this registry's group, once all of them are known not
        to collide (a collision is refused again on every lookup until it is resolved)."""
        if self._entry_points_read or self.group is None:
            return
        found: dict[str, tuple[str, str]] = {}
        for point in metadata.entry_points(group=self.group):
            dist = getattr(point.dist, "name", None) or "an installed package"
            source = f"entry point {point.value} ({dist})"
            if found.get(point.name, (None, source))[1] == source:
                found[point.name] = (point.value, source)  # the same one, seen twice
                continue
            raise ConfigError(self._twice(point.name, found[point.name][1], source))
        for name, (_, source) in found.items():
            if name in self.entries:
                raise ConfigError(self._twice(name, self.sources[name], source))
        for name, (value, source) in found.items():
            self._add(name, value, source)
        self._entry_points_read = True

    def has(self, name: str) -> bool:
        """Whether `name` is known (registered, an entry point, or an allowed path), without
        importing anything."""
        self._read_entry_points()
        return name in self.entries or (self.paths and is_import_path(name))

    def get(self, name: str) -> Any:
        """The entry called `name`, imported if it was registered by path.

        Raises:
            ConfigError: No such name (the known ones are listed), or its import fails.
        """
        self._read_entry_points()
        if name not in self.entries:
            if self.paths and is_import_path(name):
                return import_path(name, self.kind)
            raise ConfigError(self.unknown(name))
        entry = self.entries[name]
        if isinstance(entry, str):
            entry = import_path(entry, self.kind)
            self.entries[name] = entry
        return entry

    def unknown(self, name: str) -> str:
        """The one-line message for an unknown `name`."""
        known = ", ".join(self.names()) or "none"
        hint = " or a `module:Class` path" if self.paths else ""
        return f"unknown {self.kind} {name!r}; known: {known}{hint}"

    def build(self, name: str, **args: Any) -> tuple[T, Spec]:
        """Call the factory `name` with `args`; returns the object and its `Spec` for the run
        record.

        Raises:
            ConfigError: Unknown name, or arguments the factory does not take.
        """
        factory = self.get(name)
        try:
            obj = factory(**args)
        except TypeError as exc:
            raise ConfigError(f"bad arguments for {self.kind} {name!r}: {exc}") from None
        return obj, Spec(name=name, args=dict(args))

    def loaded(self) -> dict[str, Any]:
        """Every entry by name, in registration order (entry points last), each imported."""
        self._read_entry_points()
        return {name: self.get(name) for name in list(self.entries)}

    def names(self) -> list[str]:
        """Every known name (entry points included), sorted."""
        self._read_entry_points()
        return sorted(self.entries)


def _where(obj: Any) -> str:
    """`module:qualname` of a registered object, for messages."""
    module = getattr(obj, "__module__", None) or type(obj).__module__
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{name}"
