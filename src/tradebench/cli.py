"""`tradebench` command line: a thin typer app; every verb calls one library function.

Each command group lives beside the package it drives (`data/cli.py`, `llm/cli.py`,
`benchmarks/mcq/cli.py`) and is composed here.
"""

from __future__ import annotations

import typer

from tradebench.data.cli import app as data_app

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


if __name__ == "__main__":  # pragma: no cover
    app()
