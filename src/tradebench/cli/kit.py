"""What every command group shares: the console, the error boundary, the budget options."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from tradebench.errors import ConfigError, TradebenchError

if TYPE_CHECKING:
    from tradebench.llm.budget import BudgetConfig

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


MaxTokens = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        help="Budget: cap on input + output tokens over the whole command (resumable stop).",
    ),
]
MaxCostUsd = Annotated[
    float | None,
    typer.Option(
        "--max-cost-usd",
        min=0.0,
        help="Budget: cap on estimated cost in USD; needs a --price for every model.",
    ),
]
Prices = Annotated[
    list[str] | None,
    typer.Option(
        "--price",
        help="USD per million tokens, provider:model=INPUT,OUTPUT; repeat per model.",
    ),
]


def budget_config(
    max_tokens: int | None, max_cost_usd: float | None, prices: list[str] | None
) -> BudgetConfig:
    """The budget of a command from its --max-tokens, --max-cost-usd and --price options.

    Raises:
        ConfigError: A --price is not `provider:model=INPUT,OUTPUT`.
    """
    from tradebench.llm.budget import BudgetConfig, Price  # the CLI imports models on use

    table: dict[str, Price] = {}
    for item in prices or []:
        label, sep, numbers = item.rpartition("=")
        parts = numbers.split(",")
        try:
            if not sep or not label or len(parts) != 2:
                raise ValueError
            table[label] = Price(input_per_mtok=float(parts[0]), output_per_mtok=float(parts[1]))
        except ValueError:
            raise ConfigError(
                f"--price {item!r} is not provider:model=INPUT,OUTPUT "
                "(USD per million tokens, e.g. openai:gpt-4.1-mini=0.4,1.6)"
            ) from None
    return BudgetConfig(max_tokens=max_tokens, max_cost_usd=max_cost_usd, prices=table)
