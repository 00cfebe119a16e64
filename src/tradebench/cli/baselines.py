"""`tradebench baselines`: train the factor-model baselines of a run spec once, list them.

`train SPEC` trains every factor-model agent of the spec for each window (and each
retraining day with `retrain_every`) into the model cache, with a progress bar and ETA
per model; a later `tradebench run SPEC` loads those models instead of training.
`list` shows the registered model types, what they need, and the cached models.
Model libraries are imported inside the commands only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from tradebench.cli.kit import console, exits_on_error

app = typer.Typer(
    help="Factor-model baselines: train them once into the model cache, list them.\n\n"
    "Example: tradebench baselines train examples/portfolio_factor_models.yaml",
    no_args_is_help=True,
)


def _fmt(value: Any, spec: str = "+.4f") -> str:
    return "-" if value is None else format(value, spec)


@app.command("list")
@exits_on_error
def list_models(
    cache_dir: Annotated[
        Path | None, typer.Option(help="Model cache folder (default: the usual cache).")
    ] = None,
) -> None:
    """Registered model types (family, inputs, library, installed) and cached models.

    Example: tradebench baselines list
    """
    import importlib.util

    from rich.table import Table

    from tradebench.agents.factor.agent import FACTOR_MODELS
    from tradebench.agents.factor.cache import cached_entries, default_cache_dir
    from tradebench.agents.factor.models import MODELS

    folder = cache_dir or default_cache_dir()
    entries = cached_entries(folder)
    counts: dict[str, int] = {}
    for e in entries:
        name = str((e.get("model") or {}).get("name"))
        counts[name] = counts.get(name, 0) + 1
    table = Table(title=f"factor-model types ({len(FACTOR_MODELS)}); cache: {folder}")
    for col in ("model", "family", "inputs", "library", "installed", "cached"):
        table.add_column(col)
    for name in FACTOR_MODELS:
        spec, _ = MODELS.build(name)
        library = spec.estimator.split(":")[0].split(".")[0]
        library = "lightgbm" if library == "double_ensemble" else library
        installed = importlib.util.find_spec(library) is not None
        inputs = spec.inputs if spec.inputs == "table" else f"{spec.step_len}-day sequence"
        table.add_row(
            name,
            spec.family,
            inputs,
            library,
            "yes" if installed else "no",
            str(counts.get(name, 0)),
        )
    _print_wide(table)


@app.command("train")
@exits_on_error
def train(
    spec_file: Annotated[Path, typer.Argument(help="Run spec YAML with factor-model agents.")],
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Train only these agent names.")
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where a synthetic dataset of the spec is generated (default: beside the "
            "model cache, e.g. ~/.cache/tradebench/data)."
        ),
    ] = None,
) -> None:
    """Train every factor-model agent of SPEC_FILE into the model cache (IC per model).

    Models already cached are loaded, not retrained; `tradebench run` then uses them.

    Example: tradebench baselines train examples/portfolio_factor_models.yaml
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from tradebench.agents.factor.cache import default_cache_dir
    from tradebench.agents.factor.jobs import plan_jobs, run_job
    from tradebench.data import load_dataset
    from tradebench.runs.executor import resolve_dataset
    from tradebench.runs.spec import RunSpec

    spec = RunSpec.load(spec_file)
    data_dir = data_dir or default_cache_dir().parent / "data"
    dataset = load_dataset(resolve_dataset(spec.dataset, data_dir))
    agents = [(a.name, a.baseline, dict(a.args)) for a in spec.agents if a.baseline]
    windows = [(w.start, w.end) for w in spec.windows]
    jobs = plan_jobs(agents, windows, dataset, only)
    rows = []
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bars:
        for job in jobs:
            task = bars.add_task(f"{job.agent} ({job.model}) for {job.anchor}", total=None)

            def report(done: int, total: int, task: Any = task) -> None:
                bars.update(task, completed=done, total=total)

            started = time.perf_counter()
            fitted = run_job(job, report)
            rows.append((job, fitted, time.perf_counter() - started))
    _print_wide(_summary(rows))


def _print_wide(renderable: Any) -> None:
    """Print at 160 columns or more whatever the terminal (`print(width=)` is capped at the
    console's width), so a table stays whole in a narrow terminal and in a log file."""
    Console(width=max(console.width, 160), highlight=False, soft_wrap=False).print(renderable)


def _summary(rows: list[tuple[Any, Any, float]]) -> Any:
    """Validation IC, rank IC and ICIR per model (seed spread for the deep models)."""
    from rich.table import Table

    table = Table(title="factor models (validation window, before each anchor)")
    cols = ("agent", "model", "anchor", "key", "source", "rows", "IC", "rank IC", "ICIR")
    for col in (*cols, "seed IC (mean ± std)", "seconds"):
        table.add_column(col)
    for job, fitted, seconds in rows:
        valid = fitted.meta.get("valid") or {}
        spread = "-"
        if "seed_ic_std" in valid:
            spread = f"{valid['seed_ic_mean']:+.4f} ± {valid['seed_ic_std']:.4f}"
        table.add_row(
            job.agent,
            job.model,
            str(job.anchor),
            fitted.key[:12],
            "cache" if fitted.from_cache else "trained",
            str(fitted.meta.get("n_train", "-")),
            _fmt(valid.get("ic")),
            _fmt(valid.get("rank_ic")),
            _fmt(valid.get("icir"), "+.3f"),
            spread,
            f"{seconds:.1f}",
        )
    return table
