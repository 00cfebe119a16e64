"""`tradebench leaderboard RUN_DIR... -o DIR`: rank agents across run folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.cli.kit import console, exits_on_error


@exits_on_error
def leaderboard(
    run_dirs: Annotated[
        list[Path] | None, typer.Argument(help="Run folders written by `tradebench run`.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the board.")] = Path(
        "leaderboard"
    ),
    metric: Annotated[
        str, typer.Option(help="Summary column compared (higher is better).")
    ] = "total_return",
    interval: Annotated[
        str,
        typer.Option(
            help="Interval over seeds: t (Student t) or bootstrap (percentile, from 30 seeds)."
        ),
    ] = "t",
    confidence: Annotated[float, typer.Option(help="Two-sided coverage.")] = 0.95,
    resamples: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="Bootstrap resamples.")
    ] = 2_000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstrap.")] = 0,
    cutoff: Annotated[
        list[str] | None,
        typer.Option(
            "--cutoff",
            help="AGENT=YYYY-MM-DD: a model's knowledge cutoff (over the spec's); repeat.",
        ),
    ] = None,
    mcq: Annotated[
        list[Path] | None,
        typer.Option("--mcq", help="An MCQ evaluation folder (`mcq eval -o DIR`); repeat."),
    ] = None,
    measured_horizon: Annotated[
        list[Path] | None,
        typer.Option(
            "--measured-horizon",
            help="A horizon run folder: its models' measured horizons as their cutoffs "
            "(over the spec's; --cutoff wins); repeat.",
        ),
    ] = None,
) -> None:
    """Rank agents across run folders: intervals over seeds and days, paired comparisons
    with Holm-adjusted p-values, deflated Sharpe, the memory gap, MCQ accuracy per tier.

    Writes DIR/leaderboard.parquet, DIR/comparisons.parquet, DIR/memory_gap.parquet (with
    masked model rows), DIR/leaderboard.html (and DIR/leaderboard_mcq.parquet with --mcq).
    Methods: docs/statistics.md. Example: tradebench leaderboard runs/a runs/b -o board
    """
    from tradebench.errors import ConfigError
    from tradebench.leaderboard.board import LeaderboardOptions, write_leaderboard
    from tradebench.leaderboard.data import parse_cutoffs
    from tradebench.leaderboard.stats import INTERVAL_METHODS, IntervalSettings

    if interval not in INTERVAL_METHODS:
        raise ConfigError(f"unknown --interval {interval!r}; use t or bootstrap")
    if not 0 < confidence < 1:
        raise ConfigError(f"--confidence must be in (0, 1), got {confidence}")
    options = LeaderboardOptions(
        metric=metric,
        intervals=IntervalSettings(
            method=interval, confidence=confidence, resamples=resamples, seed=seed
        ),
        cutoffs={**_measured(measured_horizon or []), **parse_cutoffs(cutoff or [])},
        mcq_dirs=tuple(mcq or ()),
    )
    with console.status("reading run folders, comparing every pair of rows ..."):
        written = write_leaderboard(list(run_dirs or []), out, options)
    for path in written:
        console.print(f"wrote [bold]{path}[/]")
    board = out / "leaderboard.parquet"
    if board.exists():
        _render_top(board, metric)


TOP_ROWS = 5
"""Rows printed per window: the best by rank, then by mean."""


def _render_top(board_file: Path, metric: str) -> None:
    """The top rows of each window of the written board: rank, the row (agent, mode,
    mask), its seeds, the mean with its interval and the difference from equal weight (an
    annualised metric per day where the row ran under 20 days), then a line per flagged
    row with its flags."""
    import pandas as pd
    from rich.table import Table

    from tradebench.leaderboard.page import daily_rows
    from tradebench.report.ranking import ANNUAL_FACTORS

    board = daily_rows(pd.read_parquet(board_file), metric)
    keys = ["benchmark", "dataset", "window_start", "window_end"]
    for (bench, dataset, start, end), cell in board.groupby(keys, sort=True, dropna=False):
        title = f"{bench} · {Path(str(dataset)).name} · {start} → {end} · mean {metric}"
        table = Table("rank", "row", "seeds", "mean", "interval", "vs EW", title=title)
        for column in table.columns:
            column.no_wrap = column.header != "row"
        table.columns[1].overflow = "fold"
        flagged = []
        for r in cell.head(TOP_ROWS).itertuples(index=False):
            label = " · ".join(x for x in (str(r.agent), str(r.mode), str(r.mask)) if x != "n/a")
            daily = " per day" if r.per_day and metric in ANNUAL_FACTORS else ""
            table.add_row(
                "–" if pd.isna(r.rank) else str(int(r.rank)),
                label,
                str(int(r.seeds)),
                _num(r.mean) + daily,
                _interval(r.low, r.high, str(r.interval)),
                _num(r.vs_equal_weight),
            )
            if r.flags:
                flagged.append(f"  {label}: {r.flags}")
        console.print(table)
        for line in flagged:
            console.print(line, highlight=False, markup=False)
        if len(cell) > TOP_ROWS:
            console.print(f"... {len(cell) - TOP_ROWS} more rows in {board_file}", highlight=False)


def _num(value: float) -> str:
    """A figure to four places, `–` when undefined."""
    return "–" if value is None or value != value else f"{value:.4f}"


def _interval(low: float, high: float, over: str) -> str:
    """`[low, high] (over)`, `–` without an interval."""
    if low != low or high != high:
        return "–"
    return f"[{low:.4f}, {high:.4f}] ({over})"


def _measured(paths: list[Path]) -> dict:
    """Cutoffs from horizon runs (`tradebench.benchmarks.horizon.uses.measured_cutoffs`)."""
    from tradebench.benchmarks.horizon.results import read_horizons
    from tradebench.benchmarks.horizon.uses import measured_cutoffs

    return {k: v for path in paths for k, v in measured_cutoffs(read_horizons(path)).items()}
