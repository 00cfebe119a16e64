"""`tradebench backtest`: one agent over one window, written as a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.clikit import console, exits_on_error


def parse_agent_args(pairs: list[str]) -> dict[str, object]:
    """`key=value` pairs to a dict; values parse as int, float, bool or stay strings."""
    from tradebench.errors import ConfigError

    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"agent option {pair!r} is not key=value")
        value: object = raw
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
        if raw.lower() in {"true", "false"}:
            value = raw.lower() == "true"
        out[key.replace("-", "_")] = value
    return out


@exits_on_error
def backtest(
    dataset: Annotated[Path, typer.Option(help="Dataset folder (see `tradebench data`).")],
    agent: Annotated[
        str, typer.Option(help="cash | equal_weight | momentum_topk | benchmark (index reference).")
    ],
    start: Annotated[str, typer.Option(help="First decision day, YYYY-MM-DD.")],
    end: Annotated[str, typer.Option(help="Last decision day, YYYY-MM-DD (inclusive).")],
    out: Annotated[Path, typer.Option(help="Run folder to write.")],
    initial_cash: Annotated[float, typer.Option(help="Start capital.")] = 1_000_000.0,
    arg: Annotated[
        list[str] | None,
        typer.Option("--arg", "-A", help="Agent option key=value, e.g. -A every=1 -A k=30."),
    ] = None,
) -> None:
    """Backtest one agent under the dataset market's rules and write the run folder.

    Writes steps.parquet, positions.parquet, orders.parquet and metrics.json (plus run.json).

    Example: tradebench backtest --dataset data/cn --agent equal_weight --start 2024-01-02
    --end 2024-06-28 --out runs/ew -A every=5
    """
    from tradebench.runs.execute import BacktestRequest, backtest_to_folder

    request = BacktestRequest(
        dataset=dataset,
        agent=agent,
        start=start,
        end=end,
        out=out,
        initial_cash=initial_cash,
        agent_args=parse_agent_args(arg or []),
    )
    metrics = backtest_to_folder(request, progress=True)
    console.print(f"wrote [bold]{out}[/]")
    for key in ("total_return", "sharpe", "max_drawdown", "information_ratio", "cash_ratio"):
        value = metrics.get(key)
        console.print(f"  {key:>18}: {'-' if value is None else f'{value:.4f}'}")
