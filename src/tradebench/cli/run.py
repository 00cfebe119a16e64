"""`tradebench backtest`: one agent over one window, written as a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tradebench.cli.kit import (
    AllowUnknownPrice,
    ApiKeyEnv,
    BaseUrl,
    Endpoint,
    MaxCostUsd,
    MaxTokens,
    Rpm,
    Tpm,
    console,
    endpoint_fields,
    exits_on_error,
    minute_limits,
)
from tradebench.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd
    from rich.table import Table

    from tradebench.runs.spec import RunSpec


def parse_agent_args(pairs: list[str]) -> dict[str, object]:
    """`key=value` pairs to a dict; values parse as int, float, bool or stay strings."""

    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"agent option {pair!r} is not key=value")
        value: object = raw
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
        if raw.lower() in {"true", "false"}:
            value = raw.lower() == "true"
        out[key.replace("-", "_")] = value
    return out


def with_agent_overrides(spec: RunSpec, where: dict[str, str], limits: Any) -> RunSpec:
    """`spec` with the command line's endpoint fields (`where`) and rate `limits` (None:
    unchanged) set on every model agent."""
    model_update: dict[str, Any] = dict(where)
    if not model_update and limits is None:
        return spec
    if "endpoint" in where:  # a preset's own URL and key variable, unless given too
        model_update.setdefault("base_url", None)
        model_update.setdefault("api_key_env", None)
    from tradebench.runs.spec import AgentEntry

    def updated(entry: AgentEntry) -> AgentEntry:
        raw = entry.model_dump()
        raw["model"] = {**raw["model"], **model_update}  # the endpoint is the model block's
        if limits is not None:
            raw["limits"] = limits
        return AgentEntry.model_validate(raw)

    agents = [updated(a) if a.is_llm else a for a in spec.agents]
    return spec.model_copy(update={"agents": agents})


@exits_on_error(
    interrupted="interrupted (Ctrl-C): nothing was written to {out} (a backtest writes its "
    "folder when it ends); rerun the command to start again"
)
def backtest(
    dataset: Annotated[Path, typer.Option(help="Dataset folder (see `tradebench data`).")],
    agent: Annotated[
        str, typer.Option(help="cash | equal_weight | momentum_topk | benchmark (index reference).")
    ],
    start: Annotated[str, typer.Option(help="First decision day, YYYY-MM-DD.")],
    end: Annotated[str, typer.Option(help="Last decision day, YYYY-MM-DD (inclusive).")],
    out: Annotated[Path, typer.Option(help="Run folder to write.")],
    initial_cash: Annotated[float, typer.Option(help="Start capital.")] = 1_000_000.0,
    arg: Annotated[
        list[str] | None,
        typer.Option("--arg", "-A", help="Agent option key=value, e.g. -A every=1 -A k=30."),
    ] = None,
) -> None:
    """Backtest one agent under the dataset market's rules and write the run folder.

    Writes steps.parquet, positions.parquet, orders.parquet and metrics.json (plus run.json);
    `tradebench report OUT` reports it as a one-episode run.

    Example: tradebench backtest --dataset data/cn --agent equal_weight --start 2024-01-02
    --end 2024-06-28 --out runs/ew -A every=5
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from tradebench.runs.broker.backtest import BacktestRequest, backtest_to_folder

    request = BacktestRequest(
        dataset=dataset,
        agent=agent,
        start=start,
        end=end,
        out=out,
        initial_cash=initial_cash,
        agent_args=parse_agent_args(arg or []),
    )
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(f"backtest {agent}", total=None)
        metrics = backtest_to_folder(
            request, on_step=lambda i, n: bar.update(task, completed=i, total=n)
        )
    console.print(f"wrote [bold]{out}[/]  (next: tradebench report {out})")
    for key in ("total_return", "sharpe", "max_drawdown", "information_ratio", "cash_ratio"):
        value = metrics.get(key)
        console.print(f"  {key:>18}: {'-' if value is None else f'{value:.4f}'}")


@exits_on_error(
    interrupted="interrupted (Ctrl-C): finished episodes, every completed step and the spend "
    "are saved in {out}; rerun the same command to resume (cached replies are free)"
)
def run(
    spec: Annotated[Path, typer.Argument(help="Run spec (YAML); see examples/.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (rerun to resume).")],
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCostUsd = None,
    allow_unknown_price: AllowUnknownPrice = False,
    add_cells: Annotated[
        bool,
        typer.Option(
            "--add-cells",
            help="The spec grew (more agents, seeds, masks, modes or windows): run only the "
            "new cells into the existing folder.",
        ),
    ] = False,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            help="local (default: a process pool and one event loop) or ray (a Ray cluster; "
            "needs the ray extra); overrides the spec's `executor`.",
        ),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="Ray cluster address (HOST:6379, from `ray start --head`) for --executor ray; "
            "default RAY_ADDRESS, else a local one-node cluster.",
        ),
    ] = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    endpoint: Endpoint = None,
    rpm: Rpm = None,
    tpm: Tpm = None,
) -> None:
    """Run a spec's whole grid (agents x modes x masks x seeds x windows) into a run folder.

    Rerunning the same command resumes: finished episodes are skipped and an unfinished
    one continues from its last completed step. Writes RUN_DIR/spec.yaml,
    RUN_DIR/episodes/<id>/ (steps, positions, orders, metrics.json, trace.jsonl) and
    RUN_DIR/summary.parquet. Then `tradebench report RUN_DIR`. --max-tokens and
    --max-cost-usd override the spec's budget caps; at a cap the run stops cleanly and
    rerunning (with a higher cap) continues. Each model agent in the spec may set
    `timeout_s` (per-attempt HTTP timeout, default 120) and `max_attempts` (attempts per
    request, default 6); the 429s, 5xx, timeouts and dropped connections met, the retries
    and the seconds of backoff are recorded per step and per episode. --executor ray runs
    the same episodes on a Ray cluster (docs/scale.md) with the same results.
    --endpoint, --base-url, --api-key-env, --rpm and --tpm set those of every model agent.

    Example: tradebench run examples/portfolio_baselines.yaml -o runs/baselines
    """
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from tradebench.benchmarks import get_benchmark, run_spec
    from tradebench.runs.executor import RunProgress
    from tradebench.runs.spec import RunSpec

    loaded = RunSpec.load(spec)
    caps = {"max_tokens": max_tokens, "max_cost_usd": max_cost_usd}
    caps = {k: v for k, v in caps.items() if v is not None}
    if allow_unknown_price:
        caps["allow_unknown_price"] = True
    if caps:
        loaded = loaded.model_copy(update={"budget": loaded.budget.model_copy(update=caps)})
    loaded = with_agent_overrides(
        loaded, endpoint_fields(endpoint, base_url, api_key_env), minute_limits(rpm, tpm)
    )
    if executor is not None:
        if executor not in ("local", "ray"):
            raise ConfigError(f"--executor {executor!r}: use local or ray")
        loaded = loaded.model_copy(update={"executor": executor})
    if address is not None and loaded.executor != "ray":
        raise ConfigError("--address is for the Ray executor: add --executor ray")
    loaded.options_as(get_benchmark(loaded.benchmark).options_model)  # fail before starting
    for line in loaded.sampling_warnings():
        console.print(f"warning: {line}", highlight=False)
    counters = RunProgress()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[extra]}"),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("episodes", total=None, extra="")

        def show(p: RunProgress) -> None:
            bar.update(
                task,
                completed=p.episodes_done,
                total=p.episodes_total,
                extra=f"{p.by_state()}  steps {p.steps_done:,}  model calls "
                f"{p.model_calls:,}  tokens {p.tokens:,}"
                + (f"  limits: {p.limiter}" if p.limiter else ""),
            )

        counters.listeners.append(show)
        summary = asyncio.run(run_spec(loaded, out, counters, add_cells, address))
    console.print(
        f"{counters.episodes_done}/{counters.episodes_total} episodes, "
        f"{counters.steps_done:,} steps, {counters.model_calls:,} model calls, "
        f"{counters.tokens:,} tokens"
    )
    if counters.retries:
        console.print(f"{len(counters.retries)} episode(s) retried after a lost worker")
    import pandas as pd

    console.print(summary_table(pd.read_parquet(summary)))
    console.print(f"summary: [bold]{summary}[/]  (next: tradebench report {out})")


SHOWN_FIGURES = {"total_return": "total return", "accuracy": "accuracy"}
"""Headline figures of the summary table, where the benchmark has them (raw, never
annualised: an episode may run a few days)."""


def summary_table(frame: pd.DataFrame) -> Table:
    """The run's episodes by agent, mode and mask: episodes done, mean steps, and the
    mean of each headline figure the benchmark reports, with its min..max over episodes."""
    import pandas as pd
    from rich.table import Table

    table = Table(title="episodes (summary.parquet)")
    keys = [c for c in ("agent", "mode", "mask") if c in frame]
    figures = [c for c in SHOWN_FIGURES if c in frame and frame[c].notna().any()]
    for col in (*keys, "done", "steps", *(SHOWN_FIGURES[c] for c in figures)):
        table.add_column(col, overflow="fold")
    groups = frame.fillna({k: "-" for k in keys}).groupby(keys, sort=False, dropna=False)
    for key, g in groups:
        cells = [str(k) for k in (key if isinstance(key, tuple) else (key,))]
        done = int((g["status"] == "done").sum()) if "status" in g else len(g)
        steps = g["n_steps"].mean() if "n_steps" in g else float("nan")
        cells += [f"{done}/{len(g)}", "-" if pd.isna(steps) else f"{steps:.0f}"]
        for col in figures:
            values = g[col].dropna()
            cells.append(
                "-"
                if values.empty
                else f"{values.mean():+.2%}"
                + (f" ({values.min():+.2%} .. {values.max():+.2%})" if len(values) > 1 else "")
                if col == "total_return"
                else f"{values.mean():.1%}"
            )
        table.add_row(*cells)
    return table
