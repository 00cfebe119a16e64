"""`tradebench report RUN_DIR`: write the run's self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.cli.kit import console, exits_on_error


@exits_on_error
def report(
    run_dir: Annotated[Path, typer.Argument(help="Run folder written by `tradebench run`.")],
    samples: Annotated[
        int, typer.Option(min=0, help="Order rationales sampled per mask level.")
    ] = 5,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the rationale sample.")] = 0,
) -> None:
    """Write RUN_DIR/report.html: equity curves, metric panel, mode x mask matrix,
    rejections, tokens and cost, sampled rationales (plotly embedded, no network).

    Example: tradebench report runs/csi300-2024
    """
    from tradebench.benchmarks import build_report
    from tradebench.report import ReportOptions

    path = build_report(run_dir, ReportOptions(samples_per_mask=samples, sample_seed=seed))
    console.print(f"wrote [bold]{path}[/]")
