"""`tradebench demo`: baselines (and optionally a model) on the synthetic market, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.cli.kit import console, exits_on_error


@exits_on_error
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder of the demo.")] = Path(
        "tradebench-demo"
    ),
    seed: Annotated[int, typer.Option(min=0, help="Seed of the synthetic market.")] = 0,
    model: Annotated[
        str | None,
        typer.Option(help="Also run a model, e.g. openai:gpt-4.1-mini (key from the env)."),
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL.")] = None,
    local_model: Annotated[
        bool, typer.Option(help="Use the bundled local model when its extra is installed.")
    ] = True,
    port: Annotated[
        int | None,
        typer.Option(help="Port of the bundled model's server on 127.0.0.1 (default: free)."),
    ] = None,
) -> None:
    """Run the offline demo: baselines (and a model) on the synthetic A-share market.

    Writes a run folder with a self-contained report.html. No network or API key needed
    unless --model names a hosted model.
    """
    from rich.table import Table

    from tradebench.demo import DemoOptions, run_demo

    result = run_demo(
        DemoOptions(
            out=out,
            seed=seed,
            model=model,
            base_url=base_url,
            local_model=local_model,
            port=port,
        )
    )
    table = Table(title="demo episodes (synthetic market, 2022-03-01 .. 2022-03-29)")
    for col in ("agent", "mode", "mask", "steps", "total return", "sharpe", "cash ratio"):
        table.add_column(col, overflow="fold")
    for row in result.summary.itertuples():
        table.add_row(
            row.agent,
            row.mode,
            row.mask,
            f"{row.n_steps:.0f}",
            f"{row.total_return:+.2%}",
            f"{row.sharpe:.2f}",
            f"{row.cash_ratio:.2f}",
        )
    console.print(table)
    if len(result.activity):
        acts = Table(title=f"what {result.model} did (model episodes)")
        for col in result.activity.columns:
            acts.add_column(col.replace("_", " "), overflow="fold")
        for row in result.activity.itertuples(index=False):
            acts.add_row(*(str(v) for v in row))
        console.print(acts)
    console.print(f"report: [bold]{result.report}[/]")
