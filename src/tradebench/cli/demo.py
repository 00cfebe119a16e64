"""`tradebench demo`: baselines (and optionally a model) on the synthetic market, offline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tradebench.cli.kit import (
    ApiKeyEnv,
    BaseUrl,
    Endpoint,
    console,
    endpoint_fields,
    exits_on_error,
)

if TYPE_CHECKING:
    from tradebench.demo import DemoPlan
    from tradebench.runs.progress import RunProgress


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


MIN_DAYS_ANNUALISED = 20
"""Fewer days than this and an annualised ratio says nothing (two days gave 11.2)."""


def sharpe_text(sharpe: float, days: int) -> str:
    """The annualised Sharpe, or why it is not shown (too few days for an annual figure)."""
    if days < MIN_DAYS_ANNUALISED:
        return f"- ({days} days)"
    return f"{sharpe:.2f}"


def plan_line(plan: DemoPlan) -> str:
    """What the demo will do and how long its model part should take."""
    base = "3 baselines and the index, 2 modes, 20 trading days"
    if plan.model is None:
        return f"demo: {base}; no model ({plan.no_model_reason})"
    line = (
        f"demo: {base}; model {plan.model} decides on {plan.decisions} days: about "
        f"{plan.typical_calls} model calls (at most {plan.max_calls})"
    )
    if plan.expected_s is not None and plan.seconds_per_call is not None:
        line += (
            f"; the model reads a demo prompt in about {plan.seconds_per_call:.0f} s here "
            f"({plan.threads} thread(s)), so expect about {_minutes(plan.expected_s)}"
        )
    return line


class DemoDisplay:
    """The demo's live line: episodes, model calls, seconds a call and time left."""

    def __init__(self) -> None:
        """Build the counters and the (not yet started) rich progress display."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from tradebench.runs.progress import RunProgress

        self.counters = RunProgress()
        self.plan: DemoPlan | None = None
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[extra]}"),
            console=console,
            transient=True,
        )
        self.task = self.bar.add_task("episodes", total=None, extra="")
        self.counters.listeners.append(self.show)

    def planned(self, plan: DemoPlan) -> None:
        """Print the plan line (before the first episode)."""
        self.plan = plan
        self.bar.console.print(plan_line(plan), highlight=False)

    def show(self, p: RunProgress) -> None:
        """Refresh the line from the counters."""
        extra = f"steps {p.steps_done:,}"
        if self.plan is not None and self.plan.model is not None:
            extra += f"  model calls {p.model_calls} (about {self.plan.typical_calls})"
            if p.model_calls:
                each = p.model_seconds / p.model_calls
                left = max(self.plan.typical_calls - p.model_calls, 0) * each
                extra += f"  {each:.1f} s a call  ~{_minutes(left)} left"
        self.bar.update(self.task, completed=p.episodes_done, total=p.episodes_total, extra=extra)

    def __enter__(self) -> DemoDisplay:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


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
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    endpoint: Endpoint = None,
    local_model: Annotated[
        bool, typer.Option(help="Use the bundled local model when its extra is installed.")
    ] = True,
    port: Annotated[
        int | None,
        typer.Option(help="Port of the bundled model's server on 127.0.0.1 (default: free)."),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="Threads of the bundled model's server (default: the cores not busy)."
        ),
    ] = None,
) -> None:
    """Run the offline demo: baselines (and a model) on the synthetic A-share market.

    Writes a run folder with a self-contained report.html. No network or API key needed
    unless --model names a hosted model.

    Example: tradebench demo -o tradebench-demo --no-local-model
    """
    from rich.table import Table

    from tradebench.demo import DemoOptions, run_demo

    opts = DemoOptions(
        out=out,
        seed=seed,
        model=model,
        **endpoint_fields(endpoint, base_url, api_key_env),
        local_model=local_model,
        port=port,
        threads=threads,
    )
    if local_model and model is None:
        console.print("starting the bundled local model and timing its reading speed ...")
    with DemoDisplay() as display:
        result = run_demo(opts, display.counters, display.planned)
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
            sharpe_text(row.sharpe, int(row.n_steps)),
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
