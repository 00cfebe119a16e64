"""One agent over one window, end to end: load, build the agent, simulate, score, write.

What `tradebench backtest` runs, and what every broker-based episode writes: the step,
position and order tables, `metrics.json` (the metric panel) and `run.json` (`RunRecord`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tradebench.agents import baselines  # noqa: F401  (registers the rule agents)
from tradebench.agents.factor import agent as _factor  # noqa: F401  (registers factor models)
from tradebench.agents.protocol import AGENTS, Agent
from tradebench.data.dataset import Dataset, load_dataset
from tradebench.errors import ConfigError
from tradebench.market.rules import MarketRules
from tradebench.metrics.panel import compute_panel
from tradebench.registry import Spec
from tradebench.runs.broker.engine import BacktestResult, benchmark_result, run_backtest_sync
from tradebench.runs.records import AgentRef, RunRecord
from tradebench.runs.broker.store import write_run

BENCHMARK_AGENT = "benchmark"
"""The agent name of the index reference (scored like a run, never traded)."""


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

    def __post_init__(self) -> None:
        """Refuse a start capital that is not a positive amount (returns divide by it)."""
        if not (math.isfinite(self.initial_cash) and self.initial_cash > 0):
            raise ConfigError(
                f"initial cash {self.initial_cash:g} is not a positive amount; "
                "give the start capital, e.g. --initial-cash 1000000"
            )


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


def build_rule_agent(name: str, args: dict[str, Any], rules: MarketRules) -> tuple[Agent, Spec]:
    """A registered agent built with the market's lot size (cash takes no arguments)."""
    full = dict(args) if name == "cash" else {"lot_size": rules.lot_size, **args}
    return AGENTS.build(name, **full)


def run_record(
    agent: Spec, start: str, end: str, result: BacktestResult, rules: MarketRules, **extra: Any
) -> RunRecord:
    """The `run.json` record of a finished backtest."""
    return RunRecord(
        agent=AgentRef(name=agent.name, args=agent.args),
        start=start,
        end=end,
        initial_cash=result.initial_cash,
        benchmark_start=result.benchmark_start,
        rules=rules.__dict__,
        **extra,
    )


def data_identity(dataset: Dataset, path: Path) -> dict[str, Any]:
    """Where the data came from, for `run.json`."""
    return {
        "dataset": str(path),
        "dataset_name": dataset.manifest.name,
        "bars_sha256": dataset.manifest.files["bars"].sha256,
        "price_basis": dataset.manifest.price_basis,
    }


def backtest_to_folder(
    request: BacktestRequest, on_step: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Simulate the request and write its run folder; returns the metric panel."""
    ds = load_dataset(request.dataset)
    rules = MarketRules.for_market(ds.market, initial_cash=request.initial_cash)
    if request.agent == BENCHMARK_AGENT:
        result = benchmark_result(ds, request.start, request.end, request.initial_cash)
        built = Spec(name=BENCHMARK_AGENT, args=dict(request.agent_args))
    else:
        agent, built = build_rule_agent(request.agent, request.agent_args, rules)
        result = run_backtest_sync(ds, agent, request.start, request.end, rules, on_step=on_step)
    metrics = score(result)
    record = run_record(
        built,
        request.start,
        request.end,
        result,
        rules,
        **data_identity(ds, request.dataset),
    )
    write_run(request.out, result, metrics, record)
    return metrics
