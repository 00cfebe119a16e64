"""`tradebench mcq`: build and check backtest-comprehension multiple-choice questions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, get_args

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from tradebench.clikit import console, exits_on_error
from tradebench.errors import ConfigError

if TYPE_CHECKING:
    from tradebench.benchmarks.mcq.builder import BuildResult
    from tradebench.benchmarks.mcq.config import DataRef

app = typer.Typer(
    help="Backtest-comprehension MCQs: questions from real backtrader backtests, each answer "
    "proved by an independent re-run.",
    no_args_is_help=True,
)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    )


def _mode(all_templates: bool, num_questions: int | None, curated: bool) -> str:
    chosen = [all_templates, num_questions is not None, curated]
    if sum(chosen) != 1:
        raise ConfigError("choose exactly one of --all-templates, --num-questions N, --curated")
    return ("all_templates", "sample", "curated")[chosen.index(True)]


def _data_ref(
    dataset: Path | None, bars: Path | None, symbol: str, start: str, end: str
) -> DataRef:
    from tradebench.benchmarks.mcq.config import DataRef

    if (dataset is None) == (bars is None):
        raise ConfigError("give exactly one of --dataset DIR or --bars FILE")
    path, kind = (dataset, "dataset") if dataset is not None else (bars, "long_parquet")
    try:
        first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    except ValueError as exc:
        raise ConfigError(f"dates must be YYYY-MM-DD: {exc}") from None
    return DataRef(kind=kind, path=str(Path(path).resolve()), symbol=symbol, start=first, end=last)


@app.command("build")
@exits_on_error
def build_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
    dataset: Annotated[Path | None, typer.Option(help="tradebench dataset folder.")] = None,
    bars: Annotated[
        Path | None, typer.Option(help="Or: long Parquet file (date, symbol, OHLCV).")
    ] = None,
    symbol: Annotated[str, typer.Option(help="Instrument to backtest.")] = "AAPL",
    start: Annotated[str, typer.Option(help="First day of the window (inclusive).")] = "2020-01-01",
    end: Annotated[str, typer.Option(help="Last day of the window (inclusive).")] = "2024-01-01",
    all_templates: Annotated[
        bool, typer.Option("--all-templates", help="One question per template per strategy.")
    ] = False,
    num_questions: Annotated[
        int | None, typer.Option(help="Sample N questions from --difficulty.")
    ] = None,
    difficulty: Annotated[str, typer.Option(help="easy, medium, hard or all.")] = "all",
    curated: Annotated[
        bool, typer.Option("--curated", help="Balanced set: 10 easy, 10 medium, 10 hard.")
    ] = False,
    strategy: Annotated[str | None, typer.Option(help="Only this strategy.")] = None,
    initial_cash: Annotated[float, typer.Option(help="Starting cash.")] = 50_000.0,
    commission_rate: Annotated[float, typer.Option(help="Commission, fraction of value.")] = 0.001,
    stake: Annotated[
        int | None, typer.Option(help="Fixed shares per buy (default: percent sizing).")
    ] = None,
    percent: Annotated[float, typer.Option(help="Percent of cash per buy.")] = 95.0,
    seed: Annotated[int, typer.Option(help="Seed for everything random.")] = 0,
) -> None:
    """Build questions from real backtests and write them as JSONL.

    Example: tradebench mcq build --dataset data/us --symbol AAPL --all-templates --seed 42
    -o mcq.jsonl
    """
    from tradebench.benchmarks.mcq.builder import BuildSpec, total_attempts
    from tradebench.benchmarks.mcq.config import STRATEGY_NAMES, Sizing
    from tradebench.benchmarks.mcq.service import build_file

    if strategy is not None and strategy not in STRATEGY_NAMES:
        raise ConfigError(f"unknown strategy {strategy!r}; choose from {list(STRATEGY_NAMES)}")
    if difficulty not in get_args(BuildSpec.model_fields["difficulty"].annotation):
        raise ConfigError("--difficulty must be easy, medium, hard or all")
    sizing = Sizing(kind="stake", stake=stake) if stake else Sizing(percent=percent)
    spec = BuildSpec(
        data=_data_ref(dataset, bars, symbol, start, end),
        initial_cash=initial_cash,
        commission_rate=commission_rate,
        sizing=sizing,
        mode=_mode(all_templates, num_questions, curated),  # type: ignore[arg-type]
        num_questions=num_questions or 0,
        difficulty=difficulty,  # type: ignore[arg-type]
        strategies=(strategy,) if strategy else STRATEGY_NAMES,  # type: ignore[arg-type]
        seed=seed,
    )
    with _progress() as progress:
        task = progress.add_task("building", total=total_attempts(spec))
        result = build_file(spec, out, lambda: progress.advance(task))
    _render_build(result, out)


def _render_build(result: BuildResult, out: Path) -> None:
    from tradebench.benchmarks.mcq.stats import distractor_stats

    tiers = {t: sum(1 for r in result.records if r.tier == t) for t in ("easy", "medium", "hard")}
    console.print(
        f"wrote [bold]{len(result.records)}[/] questions ({tiers['easy']} easy, "
        f"{tiers['medium']} medium, {tiers['hard']} hard) from {result.backtests} backtests "
        f"to {out}"
    )
    st = distractor_stats(result.records)
    if st.numeric:
        console.print(
            f"nearest distractor (numeric, n={st.numeric}): p10 {st.nearest_p10:.1%}, median "
            f"{st.nearest_median:.1%}, p90 {st.nearest_p90:.1%}; answer letters {st.letters}"
        )
    if result.skipped:
        table = Table("template", "strategy", "not asked because", title="not applicable")
        for skip in result.skipped:
            table.add_row(skip.template, skip.strategy, skip.reason)
        console.print(table)


@app.command("check")
@exits_on_error
def check_cmd(
    path: Annotated[Path, typer.Argument(help="JSONL question file to check.")],
) -> None:
    """Re-run every backtest from its stored config and re-derive every answer independently.

    Exits non-zero when any question's key does not match the re-derived answer.
    """
    from tradebench.benchmarks.mcq.records import read_jsonl
    from tradebench.benchmarks.mcq.service import check_file

    total = len(read_jsonl(path))
    with _progress() as progress:
        task = progress.add_task("checking", total=total)
        report = check_file(path, lambda: progress.advance(task))
    passed = len(report.verdicts) - len(report.failures)
    console.print(
        f"{passed}/{len(report.verdicts)} questions agree ({report.backtests} backtests re-run)"
    )
    if report.failures:
        table = Table(
            "id", "template", "strategy", "keyed", "re-derived", "problem", title="mismatches"
        )
        for v in report.failures:
            table.add_row(v.id[:12], v.template, v.strategy, v.keyed, v.derived, v.detail)
        console.print(table)
    if not report.ok:
        raise typer.Exit(code=1)
