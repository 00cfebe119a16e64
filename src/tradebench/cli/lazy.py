"""Verbs registered by import path and loaded on first use, so start-up stays small.

`tradebench --help` lists every verb from its registered one-line summary without importing
the verb's module; `tradebench mcq build --bogus` imports only `tradebench.cli.mcq`. A verb
is either a `typer.Typer` (a command group such as `data`) or a command function (such as
`run`); both load into the same click commands `app.add_typer` / `app.command` would build.

Typer (0.2x and later) coerces every parameter through a pydantic `TypeAdapter`, built the
first time the parameter is processed, even for an option left at its default, so any
dispatch to a verb would import pydantic (~60 ms here). `_defer_coercion` hands each
parameter a stand-in that builds the real adapter only when a value arrives, so an unknown
option or a missing argument is reported without it; values are coerced exactly as before.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

_LISTING = "tradebench.cli.lazy.listing"
"""`ctx.meta` key set while a group renders its help: verbs show their summary unloaded."""


@dataclass(frozen=True)
class Verb:
    """One lazily loaded verb of the `tradebench` app.

    Attributes:
        name: The verb as typed (`tradebench NAME`).
        target: `module:attribute` of a `typer.Typer` (a command group) or a command function.
        summary: The line `tradebench --help` shows; a test keeps it equal to the first
            paragraph of the loaded command's own help.
    """

    name: str
    target: str
    summary: str

    def load(self) -> Any:
        """Import the target and build its click command (a group for a `typer.Typer`)."""
        module, _, attribute = self.target.partition(":")
        obj = getattr(importlib.import_module(module), attribute)
        if isinstance(obj, typer.Typer):
            command = typer.main.get_group(obj)
        else:
            single = typer.Typer(add_completion=False)
            single.command(self.name)(obj)
            command = typer.main.get_command(single)
        command.name = self.name
        return command

    def listing(self) -> TyperCommand:
        """A stand-in carrying only the name and summary, for the help listing."""
        return TyperCommand(name=self.name, help=self.summary, callback=None)


class _LazyCommands(MutableMapping[str, Any]):
    """The group's command table: loaded commands plus registered verbs, loaded on access."""

    def __init__(self, loaded: MutableMapping[str, Any], verbs: dict[str, Verb]) -> None:
        self._loaded = loaded
        self._verbs = verbs

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            self._loaded[name] = self._verbs[name].load()  # KeyError for an unknown verb
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._loaded.pop(name, None)
        self._verbs.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._verbs or name in self._loaded

    def __iter__(self) -> Iterator[str]:
        yield from self._verbs
        yield from (name for name in self._loaded if name not in self._verbs)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def get_listed(self, name: str) -> Any:
        """The loaded command `name`, else its verb's stand-in; None for an unknown name."""
        if name in self._loaded:
            return self._loaded[name]
        verb = self._verbs.get(name)
        return verb.listing() if verb is not None else None


class LazyGroup(TyperGroup):
    """A `TyperGroup` whose class attribute `verbs` adds commands loaded on first use."""

    verbs: tuple[Verb, ...] = ()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _LazyCommands(self.commands, {v.name: v for v in self.verbs})

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command `cmd_name` (loading its module), or its summary while listing."""
        table = self.commands
        if isinstance(table, _LazyCommands) and ctx.meta.get(_LISTING):
            return table.get_listed(cmd_name)
        return table.get(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        """Registered verbs in their declared order, then commands added directly."""
        return list(self.commands)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse the group's own options, its parameters' adapters deferred."""
        _defer_coercion(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The verb to run (loaded), its parameters' adapters deferred throughout."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            _defer_tree(command, ctx)
        return name, command, rest

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        """Run the app; in standalone mode a usage error (unknown option, bad value, missing
        argument) is one `error:` line naming the command's --help, exit code 2."""
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        from tradebench.cli.kit import usage_error_exit  # the kit renders every error

        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except Exception as exc:
            usage_error_exit(exc)
            raise
        sys.exit(code if isinstance(code, int) else 0)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The usual help, listing unloaded verbs by their summaries."""
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            ctx.meta.pop(_LISTING, None)


def lazy_group(verbs: Sequence[Verb]) -> type[LazyGroup]:
    """The group class (for `typer.Typer(cls=...)`) that serves `verbs` lazily."""
    return type("TradebenchGroup", (LazyGroup,), {"verbs": tuple(verbs)})


def _defer_tree(command: Any, ctx: Any) -> None:
    """Defer coercion in `command` and, for a group, in every command below it."""
    _defer_coercion(command.get_params(ctx))
    for sub in getattr(command, "commands", {}).values():
        _defer_tree(sub, ctx)


def _defer_coercion(params: Sequence[Any]) -> None:
    """Give each typer parameter a coercer that builds its pydantic adapter on first value.

    A no-op on typer versions without lazily built runtime parameters.
    """
    deferred = _deferred_runtime_param()
    if deferred is None:
        return
    for param in params:
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
            descriptor = param.type_descriptor
            param._runtime_param = deferred(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )


@functools.cache
def _deferred_runtime_param() -> type | None:
    """The stand-in runtime parameter class for this typer, or None where typer has none."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return None

    @dataclass(frozen=True)
    class DeferredRuntimeParam(RuntimeParam):  # type: ignore[misc]
        """Builds the real runtime parameter when the first non-missing value arrives."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            real = build_runtime_param(param.type_descriptor)
            param._runtime_param = real
            return real._coerce_value(value, param=param, ctx=ctx)

    return DeferredRuntimeParam
