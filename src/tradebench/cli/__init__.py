"""`tradebench` command line: a thin typer app; every verb calls one library function.

The only package that imports typer: one module per command group (`data`, `llm`, `mcq`,
`probe`, `baselines`, `serve`) or verb (`run`, `report`, `attribute`, `leaderboard`, `demo`),
registered below by import path and loaded on first use (`cli/lazy.py`), so `tradebench
--help` and an argument error import only typer, rich and the verb at hand. Library
functions stay callable from Python without it.

Adding a verb: one `Verb(name, "tradebench.cli.module:attribute", summary)` line in
`VERBS`, where the attribute is a `typer.Typer` or a command function and the summary is the
first paragraph of its help (tests/test_cli_imports.py checks they agree).
"""

from __future__ import annotations

import typer

from tradebench.cli.kit import show_warnings
from tradebench.cli.lazy import Verb, lazy_group

VERBS = (
    Verb(
        "backtest",
        "tradebench.cli.run:backtest",
        "Backtest one agent under the dataset market's rules and write the run folder.",
    ),
    Verb(
        "run",
        "tradebench.cli.run:run",
        "Run a spec's whole grid (agents x modes x masks x seeds x windows) into a run folder.",
    ),
    Verb(
        "serve",
        "tradebench.cli.serve:app",
        "Serve one episode of a run spec to an outside agent scaffold over MCP (stdio or "
        "streamable HTTP).",
    ),
    Verb(
        "report",
        "tradebench.cli.report:report",
        "Write RUN_DIR/report.html: equity curves, metric panel, mode x mask matrix, "
        "rejections, tokens and cost, sampled rationales (plotly embedded, no network).",
    ),
    Verb(
        "leaderboard",
        "tradebench.cli.leaderboard:leaderboard",
        "Rank agents across run folders: intervals over seeds and days, paired comparisons "
        "with Holm-adjusted p-values, deflated Sharpe, the memory gap, MCQ accuracy per tier.",
    ),
    Verb(
        "plan",
        "tradebench.cli.plan:plan",
        "Before a run: the smallest return and Sharpe differences a spec can detect, the "
        "days and seeds a target difference needs, and each model agent's requests, tokens, "
        "cost (from the dated price table; an unknown price is said) and wall time under its "
        "rate limits.",
    ),
    Verb(
        "attribute",
        "tradebench.cli.attribute:attribute",
        "Decompose each episode's daily return into Common + Style + Selection + Trading.",
    ),
    Verb(
        "baselines",
        "tradebench.cli.baselines:app",
        "Factor-model baselines: train them once into the model cache, list them.",
    ),
    Verb(
        "demo",
        "tradebench.cli.demo:demo",
        "Run the offline demo: baselines (and a model) on the synthetic A-share market.",
    ),
    Verb(
        "data",
        "tradebench.cli.data:app",
        "Create and inspect datasets (a folder of Parquet tables plus manifest.json).",
    ),
    Verb(
        "llm",
        "tradebench.cli.llm:app",
        "Talk to models: ping an endpoint, serve a small local model.",
    ),
    Verb(
        "mcq",
        "tradebench.cli.mcq:app",
        "Backtest-comprehension MCQs: questions from real backtrader backtests, each answer "
        "proved by an independent re-run; model evaluation and LLM question mining.",
    ),
    Verb(
        "horizon",
        "tradebench.cli.horizon:app",
        "Knowledge-horizon probe: which months of market facts does a model remember?",
    ),
    Verb(
        "probe",
        "tradebench.cli.probe:app",
        "De-anonymisation probe: can attackers recover tickers and dates from masked payloads?",
    ),
)

app = typer.Typer(
    name="tradebench",
    cls=lazy_group(VERBS),
    help=(
        "Evaluate LLM trading agents honestly: point-in-time data, identity/date masking, "
        "real market rules.\n\nStart with `tradebench demo`, then `tradebench data --help`."
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _setup() -> None:
    """Library warnings (a window the data does not cover, retried faults) reach the screen."""
    show_warnings()
