"""Small helpers every command group shares: the console and the error boundary."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from tradebench.errors import TradebenchError

P = ParamSpec("P")
R = TypeVar("R")

console = Console(soft_wrap=True, emoji=False)
err_console = Console(stderr=True, soft_wrap=True, emoji=False)


def exits_on_error(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn a `TradebenchError` into a one-line message and exit code 1 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except TradebenchError as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(code=1) from None

    return wrapper
