"""`tradebench horizon ...`: the knowledge-horizon probe's questions, power, curves and uses.

Running the probe is `tradebench run SPEC` with `benchmark: horizon` (docs/horizon.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tradebench.cli.kit import console, exits_on_error

app = typer.Typer(
    help="Knowledge-horizon probe: which months of market facts does a model remember?\n\n"
    "Example: tradebench horizon power --alpha 0.05 --target 0.8",
    no_args_is_help=True,
)


@app.command("questions")
@exits_on_error
def questions_cmd(
    dataset: Annotated[Path, typer.Argument(help="Dataset folder.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Question file to write (.jsonl).")],
    start: Annotated[str, typer.Option(help="First month (YYYY-MM).")],
    end: Annotated[str, typer.Option(help="Last month (YYYY-MM).")],
    per_month: Annotated[int, typer.Option("--per-month", min=4, help="Questions per month.")] = 72,
    seed: Annotated[int, typer.Option(help="Seed of the question set.")] = 0,
    kinds: Annotated[str, typer.Option(help="Kinds, comma-separated.")] = (
        "best_week,index_higher,close_of,headline"
    ),
) -> None:
    """Build the probe's questions for a span, check each answer against the raw files, write them.

    Example: tradebench horizon questions data/csi300 -o q.jsonl --start 2018-01 --end 2026-05
    """
    from tradebench.benchmarks.horizon.sets import write_question_set

    chosen = tuple(k.strip() for k in kinds.split(",") if k.strip())
    result = write_question_set(dataset, start, end, out, per_month, seed, chosen)  # type: ignore[arg-type]
    table = Table("kind", "questions", "answer letters")
    for kind, letters in result.counts().items():
        table.add_row(
            kind,
            str(sum(letters.values())),
            " ".join(f"{k}:{v}" for k, v in sorted(letters.items())),
        )
    console.print(table)
    console.print(f"wrote {result.path} ({len(result.questions)} questions)")
    if result.mismatches:
        for m in result.mismatches[:10]:
            console.print(f"error: {m.id}: stored {m.stored}, raw data gives {m.derived} ({m.why})")
        raise typer.Exit(1)
    console.print("check: every answer reproduced from the raw files")


@app.command("power")
@exits_on_error
def power_cmd(
    alpha: Annotated[float, typer.Option(help="One-sided level.")] = 0.05,
    target: Annotated[float, typer.Option(help="Power to reach.")] = 0.80,
) -> None:
    """Questions per month needed to detect a lift over chance, for each mix of kinds.

    Example: tradebench horizon power --alpha 0.05 --target 0.8
    """
    from tradebench.benchmarks.horizon.sets import power_tables

    for name, rows in power_tables(alpha, target).items():
        table = Table("lift", "questions per month", "power", title=name)
        for r in rows:
            table.add_row(f"+{r.lift:.0%}", str(r.questions), f"{r.power:.3f}")
        console.print(table)


@app.command("show")
@exits_on_error
def show_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A horizon run folder (tradebench run).")],
) -> None:
    """Measure each model's horizon in a horizon run; write horizon.json and the plots.

    Example: tradebench horizon show runs/horizon-csi300
    """
    from tradebench.benchmarks.horizon.results import write_results

    result, files = write_results(run_dir)
    table = Table(
        "agent", "horizon", "90% interval", "valid", "powered", "blinded", "after serving"
    )
    for h in result.agents:
        ctl = {c.name: c for c in h.controls}
        cells = [
            f"{c.accuracy:.3f} vs {c.chance:.3f} (p={c.p_value:.3g})" if c.n else "not run"
            for c in (ctl["blinded"], ctl["after_serving"])
        ]
        span = f"{h.horizon_low or 'none'} .. {h.horizon_high or 'none'}"
        horizon = (h.horizon or "none") + (" (censored)" if h.censored else "")
        table.add_row(
            h.agent, horizon, span, "yes" if h.valid else "NO", "yes" if h.powered else "no", *cells
        )
    console.print(table)
    for f in files:
        console.print(f"wrote {f}")


@app.command("certify")
@exits_on_error
def certify_cmd(
    mandate_run: Annotated[Path, typer.Argument(help="A mandate run folder (certificates).")],
    probe: Annotated[Path, typer.Option("--probe", help="The horizon run of the same models.")],
) -> None:
    """Put each model's measured horizon beside its stated cutoff in a mandate run's certificate.

    Writes MANDATE_RUN/certificate_measured.parquet; the stated certificates stay as they are.

    Example: tradebench horizon certify runs/mandate --probe runs/horizon
    """
    from tradebench.benchmarks.horizon.results import read_horizons
    from tradebench.benchmarks.horizon.uses import MEASURED_FILE, certify_run

    rows = certify_run(mandate_run, read_horizons(probe))
    table = Table("episode", "stated", "measured horizon", "verdict", "finding")
    for r in rows.itertuples():
        horizon = r.measured_horizon if isinstance(r.measured_horizon, str) else "none"
        table.add_row(r.episode_id, r.stated_verdict, horizon, r.verdict, r.measured_finding)
    console.print(table)
    console.print(f"wrote {Path(mandate_run) / MEASURED_FILE}")


@app.command("windows")
@exits_on_error
def windows_cmd(
    probe: Annotated[Path, typer.Argument(help="A horizon run folder or its horizon.json.")],
    margin_months: Annotated[
        int, typer.Option("--margin-months", min=0, help="Months to add.")
    ] = 0,
) -> None:
    """The first day an evaluation window may start for each probed model.

    Example: tradebench horizon windows runs/horizon --margin-months 3
    """
    from tradebench.benchmarks.horizon.results import read_horizons
    from tradebench.benchmarks.horizon.uses import first_window_start

    table = Table("agent", "measured horizon", "first window start")
    for agent, h in read_horizons(probe).items():
        start = (
            first_window_start(h, margin_months).isoformat() if h.valid else "none (invalid curve)"
        )
        table.add_row(agent, h.horizon or "none", start)
    console.print(table)
