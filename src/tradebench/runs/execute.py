"""Run a backtest request end to end: load, build the agent, simulate, score, write."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from tradebench.agents import baselines  # noqa: F401  (registers the rule agents)
from tradebench.agents.factor import agent as _factor  # noqa: F401  (registers factor models)
from tradebench.agents.protocol import AGENTS
from tradebench.data.dataset import load_dataset
from tradebench.market.rules import MarketRules
from tradebench.metrics.panel import compute_panel
from tradebench.runs.backtest import BacktestResult, benchmark_result, run_backtest_sync
from tradebench.runs.store import write_run


@dataclass(frozen=True)
class BacktestRequest:
    """Everything `tradebench backtest` needs."""

    dataset: Path
    agent: str
    start: str
    end: str
    out: Path
    initial_cash: float = 1_000_000.0
    agent_args: dict[str, Any] = field(default_factory=dict)


def score(result: BacktestResult) -> dict[str, Any]:
    """The metric panel of a result as a JSON-able dict."""
    panel = compute_panel(
        result.steps,
        result.positions,
        result.orders,
        initial_cash=result.initial_cash,
        benchmark_start=result.benchmark_start,
    )
    return json.loads(panel.to_json())


def backtest_to_folder(request: BacktestRequest, progress: bool = False) -> dict[str, Any]:
    """Simulate the request and write its run folder; returns the metric panel."""
    ds = load_dataset(request.dataset)
    rules = MarketRules.for_market(ds.market, initial_cash=request.initial_cash)
    spec: dict[str, Any] = {"name": request.agent, "args": request.agent_args}
    if request.agent == "benchmark":
        result = benchmark_result(ds, request.start, request.end, request.initial_cash)
    else:
        args = {"lot_size": rules.lot_size, **request.agent_args}
        if request.agent == "cash":
            args = dict(request.agent_args)
        agent, built = AGENTS.build(request.agent, **args)
        spec = {"name": built.name, "args": built.args}
        with _progress(progress) as bar:
            task = bar.add_task(f"backtest {request.agent}", total=None)
            result = run_backtest_sync(
                ds,
                agent,
                request.start,
                request.end,
                rules,
                on_step=lambda i, n: bar.update(task, completed=i, total=n),
            )
    metrics = score(result)
    info = {
        "agent": spec,
        "dataset": str(request.dataset),
        "dataset_name": ds.manifest.name,
        "bars_sha256": ds.manifest.files["bars"].sha256,
        "start": request.start,
        "end": request.end,
        "rules": rules.__dict__,
        "price_basis": ds.manifest.price_basis,
    }
    write_run(request.out, result, metrics, info)
    return metrics


def _progress(enabled: bool) -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=True,
    )
