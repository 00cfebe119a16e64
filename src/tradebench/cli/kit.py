"""What every command group shares: the console, the error boundary, the budget options.

The error boundary (`exits_on_error`) is the one place a command's failure becomes text: a
`TradebenchError` (also inside an exception group), an operating-system error on a path the
user named or the machine ran out of (a full disk, a folder given where a file is expected)
and invalid values for a command's settings (`validated`) each print one `error:` line and
exit 1; Ctrl-C prints what is saved and how to resume, and exits 130. Anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from tradebench.errors import ConfigError, TradebenchError

if TYPE_CHECKING:
    from pydantic import ValidationError

    from tradebench.llm.budget import BudgetConfig

P = ParamSpec("P")
R = TypeVar("R")

INTERRUPTED = "interrupted (Ctrl-C) before the command finished; rerun it to start again"
"""What Ctrl-C prints for a command that does not say more (`exits_on_error(interrupted=)`)."""
REPLIES_KEPT = (
    "interrupted (Ctrl-C): the replies received so far are cached and the spend is saved "
    "under {out}; rerun the same command to continue (cached replies are free)"
)
"""What Ctrl-C prints for the model commands that resume from their cache and budget."""
EXIT_INTERRUPTED = 130

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


def error_line(exc: BaseException) -> str:
    """The one line the CLI prints for an error: its message with line breaks folded (an
    operating-system error as its path and reason, e.g. `cannot use out.json: Is a
    directory`)."""
    if isinstance(exc, OSError) and not isinstance(exc, TradebenchError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        where = exc.filename if exc.filename is not None else ""
        text = f"cannot use {os.fsdecode(where)}: {reason}" if where else reason
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            text += "; free some space and rerun the same command (finished work is kept)"
        return "error: " + " ".join(text.split())
    return "error: " + " ".join(str(exc).split())


def _user_error(exc: BaseException) -> BaseException | None:
    """The error in `exc` that is the user's or the machine's to fix (ours, an OSError on a
    file, invalid values for a command's settings model), or None when `exc` is a bug."""
    ours = _ours(exc)
    if ours is not None:
        return ours
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc
    if type(exc).__module__.startswith("pydantic"):  # pydantic is loaded if it raised
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            return invalid_values(exc)
    return None


def exits_on_error(fn: Callable[P, R] | None = None, *, interrupted: str = INTERRUPTED) -> Any:
    """Decorate a command: a `TradebenchError` (also one inside an exception group from a task
    group), an `OSError` on a file or a pydantic `ValidationError` of the settings a command
    built from its options becomes one `error:` line and exit code 1, without a traceback;
    Ctrl-C prints `interrupted` (what is saved and how to resume; `{name}` fields are filled
    from the command's arguments) and exits 130; anything else is a bug and keeps its
    traceback. Use bare or as `@exits_on_error(interrupted="...")`."""
    if fn is None:
        return functools.partial(exits_on_error, interrupted=interrupted)

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            err_console.print(_filled(interrupted, kwargs), highlight=False, markup=False)
            raise typer.Exit(code=EXIT_INTERRUPTED) from None
        except (Exception, BaseExceptionGroup) as exc:
            shown = _user_error(exc)
            if shown is None:
                raise
            err_console.print(error_line(shown), highlight=False, markup=False)
            raise typer.Exit(code=1) from None

    return wrapper


def usage_error_exit(exc: BaseException) -> None:
    """For click's own errors (a usage error, an abort at a prompt): print one `error:` line
    and exit with click's code; return for anything else."""
    from typer._click import ClickException  # typer's own click (typer >= 0.2x)

    if isinstance(exc, typer.Abort):
        err_console.print("error: aborted", highlight=False, markup=False)
        raise SystemExit(1) from None
    if not isinstance(exc, ClickException):
        return
    if type(exc).__name__ != "NoArgsIsHelpError":  # its help is already on screen
        text = " ".join(exc.format_message().split())
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            text += f" (see `{ctx.command_path} --help`)"
        err_console.print(f"error: {text}", highlight=False, markup=False)
    raise SystemExit(exc.exit_code) from None


def _filled(template: str, values: dict[str, Any]) -> str:
    """`template` with `{option}` fields filled from the command's arguments."""
    try:
        return template.format_map(values)
    except (KeyError, IndexError, ValueError):
        return template


def invalid_values(exc: ValidationError) -> ConfigError:
    """A `ConfigError` naming each invalid value of a settings model a command built from its
    options: the field as its option (`commission_rate` -> `--commission-rate`, the
    commands' naming rule), the value given and the rule it breaks."""
    parts = []
    for item in exc.errors():
        field = ".".join(str(x) for x in item["loc"])
        name = "--" + field.replace("_", "-") if field else "a value"
        given = item.get("input")
        shown = "" if isinstance(given, dict | list) else f" {given!r}"
        parts.append(f"{name}{shown}: {item['msg']}")
    return ConfigError("invalid value: " + "; ".join(parts))


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


BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="Endpoint root (OpenAI style includes /v1); default: the --endpoint preset's, "
        "else the provider's public API.",
    ),
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="Environment variable holding the endpoint's key (sent as a bearer token, "
        "written nowhere); default: the preset's, else none for a --base-url.",
    ),
]
Endpoint = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="Endpoint preset: vllm, llama.cpp, ollama, lmstudio, openrouter, deepseek, "
        "together, groq, dashscope (qwen), moonshot, zhipu (base URL, key variable, "
        "tool_choice forms; docs/llm.md).",
    ),
]
Rpm = Annotated[
    int | None,
    typer.Option("--rpm", min=1, help="Rate limit: requests per minute to each endpoint."),
]
Tpm = Annotated[
    int | None,
    typer.Option("--tpm", min=1, help="Rate limit: tokens per minute to each endpoint."),
]


def endpoint_fields(
    endpoint: str | None, base_url: str | None, api_key_env: str | None
) -> dict[str, str]:
    """The `ModelConfig` fields of the --endpoint, --base-url and --api-key-env options
    (those given only).

    Raises:
        ConfigError: --endpoint names no preset.
    """
    if endpoint is not None:
        from tradebench.llm.presets import preset

        preset(endpoint)  # an unknown name fails here, with the known ones listed
    given = {"endpoint": endpoint, "base_url": base_url, "api_key_env": api_key_env}
    return {k: v for k, v in given.items() if v is not None}


def minute_limits(rpm: int | None, tpm: int | None) -> Any:
    """The `MinuteLimits` of --rpm and --tpm, or None when neither is given."""
    if rpm is None and tpm is None:
        return None
    from tradebench.llm.limits import MinuteLimits

    return MinuteLimits(rpm=rpm, tpm=tpm)
