"""`tradebench plan SPEC`: power before spending (and any other registered plan section)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tradebench.cli.kit import console, exits_on_error


@exits_on_error
def plan(
    spec: Annotated[Path, typer.Argument(help="Run spec (YAML), as for `tradebench run`.")],
    daily_sd: Annotated[
        float, typer.Option(min=0.0, help="Sd of two agents' daily return difference.")
    ] = 0.01,
    seed_sd: Annotated[
        float | None,
        typer.Option(min=0.0, help="Sd across seeds of an agent's window total return."),
    ] = None,
    rho: Annotated[
        float, typer.Option(min=-1.0, max=0.999, help="Correlation of two agents' daily returns.")
    ] = 0.5,
    target_return: Annotated[
        float | None, typer.Option(min=0.0, help="Annual return difference to detect.")
    ] = None,
    target_sharpe: Annotated[
        float | None, typer.Option(min=0.0, help="Annualised Sharpe difference to detect.")
    ] = None,
    alpha: Annotated[float, typer.Option(min=0.0, max=1.0, help="Two-sided test level.")] = 0.05,
    power: Annotated[float, typer.Option(min=0.0, max=1.0, help="Power.")] = 0.8,
    previous: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="A previous run folder: its measured spread replaces "
            "--daily-sd, --rho and --seed-sd, its measured requests and tokens per step "
            "replace --requests-per-step, --input-tokens and --output-tokens.",
        ),
    ] = None,
    requests_per_step: Annotated[
        float, typer.Option(min=0.0, help="Cost: model requests per decision step.")
    ] = 2.0,
    input_tokens: Annotated[
        int, typer.Option(min=0, help="Cost: input tokens of one request.")
    ] = 4000,
    output_tokens: Annotated[
        int, typer.Option(min=0, help="Cost: output tokens of one request.")
    ] = 400,
) -> None:
    """Before a run: the smallest return and Sharpe differences a spec can detect, the
    days and seeds a target difference needs, and each model agent's requests, tokens,
    cost (from the dated price table; an unknown price is said) and wall time under its
    rate limits.

    From stated spreads (--daily-sd, --rho, --seed-sd) or a previous run's (--from), at
    80% power and a 5% two-sided level by default. Methods: docs/statistics.md.

    Example: tradebench plan examples/portfolio_baselines.yaml --target-return 0.1
    """
    from tradebench.errors import ConfigError
    from tradebench.plan import PlanAssumptions, build_plan, plan_context

    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ConfigError(f"--alpha and --power must be in (0, 1), got {alpha}, {power}")
    if previous is not None and not previous.is_dir():
        raise ConfigError(f"--from {previous} is not a run folder")
    assumptions = PlanAssumptions(
        daily_sd=daily_sd,
        seed_sd=seed_sd,
        rho=rho,
        target_return=target_return or None,
        target_sharpe=target_sharpe or None,
        alpha=alpha,
        power=power,
        previous=previous,
        requests_per_step=requests_per_step,
        input_tokens_per_request=input_tokens,
        output_tokens_per_request=output_tokens,
    )
    for section in build_plan(plan_context(spec, assumptions)):
        table = Table(title=section.title, show_header=False)
        table.add_column("quantity")
        table.add_column("value", justify="right")
        for name, value in section.rows:
            table.add_row(name, value)
        console.print(table)
        for text in section.notes:
            console.print(text)
