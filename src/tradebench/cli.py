"""`tradebench` command line: a thin typer app; every verb calls one library function.

Each command group lives beside the package it drives (`data/cli.py`, `llm/cli.py`,
`benchmarks/mcq/cli.py`) and is composed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.benchmarks.mcq.cli import app as mcq_app
from tradebench.clikit import console, exits_on_error
from tradebench.data.cli import app as data_app
from tradebench.llm.cli import app as llm_app
from tradebench.report.cli import report as report_cmd
from tradebench.runs.cli import backtest as backtest_cmd
from tradebench.runs.cli import run as run_cmd

app = typer.Typer(
    name="tradebench",
    help=(
        "Evaluate LLM trading agents honestly: point-in-time data, identity/date masking, "
        "real market rules.\n\nStart with `tradebench demo`, then `tradebench data --help`."
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(data_app, name="data")
app.command("backtest")(backtest_cmd)
app.command("run")(run_cmd)
app.command("report")(report_cmd)
app.add_typer(llm_app, name="llm")
app.add_typer(mcq_app, name="mcq")


@app.command()
@exits_on_error
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the demo's files.")] = Path(
        "tradebench-demo"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the synthetic market.")] = 0,
) -> None:
    """Run the offline demo on the embedded synthetic A-share market (no network, no key)."""
    from tradebench.demo import run_demo

    result = run_demo(out, seed=seed)
    console.print(f"dataset: [bold]{result.dataset_dir}[/]")
    for key, value in result.stats.model_dump().items():
        console.print(f"  {key:>18}: {value:.4f}")


if __name__ == "__main__":  # pragma: no cover
    app()
