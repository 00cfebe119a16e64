"""What every command group shares: the console, the error boundary, the budget options."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console

from tradebench.errors import ConfigError, TradebenchError

if TYPE_CHECKING:
    from tradebench.llm.budget import BudgetConfig

P = ParamSpec("P")
R = TypeVar("R")

console = Console(soft_wrap=True, emoji=False)
err_console = Console(stderr=True, soft_wrap=True, emoji=False)


class _WarningLine(logging.Handler):
    """Prints a library warning as one `warning:` line on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(
            "warning: " + " ".join(record.getMessage().split()), highlight=False, markup=False
        )


def show_warnings() -> None:
    """Route the library's warnings (`tradebench.*` loggers) to the screen, once."""
    logger = logging.getLogger("tradebench")
    if not any(isinstance(h, _WarningLine) for h in logger.handlers):
        handler = _WarningLine(level=logging.WARNING)
        logger.addHandler(handler)


def _ours(exc: BaseException) -> TradebenchError | None:
    """The first `TradebenchError` in `exc` or, for an exception group, in its leaves."""
    if isinstance(exc, TradebenchError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _ours(inner)
            if found is not None:
                return found
    return None


def error_line(exc: TradebenchError) -> str:
    """The one line the CLI prints for an error: its message with line breaks folded."""
    return "error: " + " ".join(str(exc).split())


def exits_on_error(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn a `TradebenchError` (also one inside an exception group from a task group) into
    one `error:` line and exit code 1, without a traceback; anything else is a bug and keeps
    its traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (TradebenchError, BaseExceptionGroup) as exc:
            ours = _ours(exc)
            if ours is None:
                raise
            err_console.print(error_line(ours), highlight=False, markup=False)
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
        help="Budget: cap on estimated cost in USD; every model needs a price (genai-prices, "
        "--price, or the spec's budget.prices) unless --allow-unknown-price.",
    ),
]
AllowUnknownPrice = Annotated[
    bool,
    typer.Option(
        "--allow-unknown-price",
        help="Budget: run under --max-cost-usd even when a model has no price (its cost is "
        "reported as unknown and is not capped).",
    ),
]
AllowWeakSandbox = Annotated[
    bool,
    typer.Option(
        "--allow-weak-sandbox",
        help="Run model-written code even where the kernel lacks a sandbox layer "
        "(user namespaces, Landlock, seccomp); results list the layers that held.",
    ),
]
Prices = Annotated[
    list[str] | None,
    typer.Option(
        "--price",
        help="USD per million tokens, provider:model=INPUT,OUTPUT; repeat per model. "
        "Overrides genai-prices, the default source.",
    ),
]


def budget_config(
    max_tokens: int | None,
    max_cost_usd: float | None,
    prices: list[str] | None,
    allow_unknown_price: bool = False,
) -> BudgetConfig:
    """The budget of a command from its --max-tokens, --max-cost-usd, --price and
    --allow-unknown-price options.

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
    return BudgetConfig(
        max_tokens=max_tokens,
        max_cost_usd=max_cost_usd,
        prices=table,
        allow_unknown_price=allow_unknown_price,
    )
