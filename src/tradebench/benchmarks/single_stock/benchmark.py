"""The single-stock persona benchmark as the harness runs it: grid, episodes, records.

Grid: every task (windows x symbols x personas) for every agent and seed; model agents
also for every mask level (rule baselines read no text, so masks do not apply to them).
The benchmark keeps FinMem's own ledger (a +1/0/-1 position earning the log return from
one close to the next, no broker) and its own step series; each decision is one journal
line, so a killed episode resumes where it stopped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tradebench.benchmarks.single_stock.agents import BASELINES, SingleStockAgent, StepDecision
from tradebench.benchmarks.single_stock.config import SingleStockOptions, Task, resolve_tasks
from tradebench.benchmarks.single_stock.episode import build_episode, plan_episode
from tradebench.benchmarks.single_stock.llm_agent import SingleStockLLMAgent
from tradebench.benchmarks.single_stock.prompt_files import load_prompts
from tradebench.benchmarks.single_stock.report import SINGLE_STOCK_SECTIONS
from tradebench.benchmarks.single_stock.store import (
    SINGLE_STOCK_COLUMNS,
    single_stock_columns,
    write_episode,
)
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.runs.axes import mask_axis
from tradebench.runs.protocol import EpisodeContext, EpisodeRef
from tradebench.runs.records import NOT_APPLICABLE, EpisodeRecord
from tradebench.runs.spec import AgentEntry, RunSpec, Window
from tradebench.runs.summary import BROKER_COLUMNS, default_metrics

NAME = "single_stock"
INITIAL_WEALTH = 1.0
"""The ledger's wealth starts at 1."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


def task_of(ref: EpisodeRef) -> Task:
    """The task an episode runs."""
    return Task(
        symbol=ref.task["symbol"],
        start=ref.window.start,
        end=ref.window.end,
        persona=ref.task["persona"],
        name=ref.task.get("cell"),
    )


def expand(spec: RunSpec, options: SingleStockOptions) -> list[EpisodeRef]:
    """Every episode in a stable order: tasks x agents x seeds (x masks for models).

    Raises:
        ConfigError: No task to run.
    """
    windows = [(w.start, w.end) for w in spec.windows]
    try:
        tasks = resolve_tasks(options, windows)
    except ValueError as exc:
        raise ConfigError(f"single_stock: {exc}") from None
    out: list[EpisodeRef] = []
    for task in tasks:
        for a in spec.agents:
            for seed in spec.seeds:
                masks = spec.masks if a.is_llm else [NOT_APPLICABLE]
                for mask in masks:
                    head = f"{a.name}_{task.persona}" + (f"_{mask}" if a.is_llm else "")
                    out.append(
                        EpisodeRef(
                            id=_slug(f"{head}_{task.cell}_s{seed}"),
                            agent=a.name,
                            kind="llm" if a.is_llm else "baseline",
                            mode=task.persona,
                            mask=mask,
                            seed=seed,
                            window=Window(start=task.start, end=task.end),
                            task={
                                "symbol": task.symbol,
                                "persona": task.persona,
                                "cell": task.name,
                            },
                        )
                    )
    return out


def build_baseline(entry: AgentEntry) -> tuple[SingleStockAgent, dict[str, Any]]:
    """A registered single-stock baseline and its record (name and arguments)."""
    agent, built = BASELINES.build(entry.baseline or "", **entry.args)
    return agent, {"baseline": {"name": built.name, "args": built.args}}


class SingleStockBenchmark:
    """FinMem's single-stock protocol: buy/sell/hold under a persona, one symbol per task."""

    name = NAME
    options_model = SingleStockOptions
    axes = (mask_axis(),)
    """Every mask level (for model agents); no modes: personas (the options' `personas`) play
    their part."""
    summary_columns = (*BROKER_COLUMNS, *SINGLE_STOCK_COLUMNS)
    broker_files = True
    """Its ledger writes the broker's step table (`steps.parquet`: equity, tokens, faults)."""
    report_sections = SINGLE_STOCK_SECTIONS

    def expand(
        self, spec: RunSpec, options: SingleStockOptions, dataset: Dataset
    ) -> list[EpisodeRef]:
        """The grid; every task and baseline is checked here, before any model call."""
        episodes = expand(spec, options)
        for ref in episodes:
            plan_episode(dataset, task_of(ref), options.episode_length)
        for entry in spec.agents:
            if not entry.is_llm:
                build_baseline(entry)
        return episodes

    def summary_row(self, record: EpisodeRecord, folder: Path) -> dict[str, Any]:
        """The flat panel fields (return, Sharpe, drawdown, buy-and-hold as the benchmark)
        plus the task and every score: the composite, its components, the raw metrics of
        the strategy and of buy-and-hold, and the guard counts, so tasks rank from the
        summary alone."""
        return default_metrics(record, folder) | single_stock_columns(record, folder)

    async def run_episode(self, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
        """Run (or resume) one episode to the end and write its files."""
        options: SingleStockOptions = ctx.options
        prompts = load_prompts(options.prompt_version)
        level = "bright" if ref.mask == NOT_APPLICABLE else ref.mask
        task = task_of(ref)
        episode = build_episode(
            ctx.dataset,
            task,
            options,
            prompts,
            level,
            ref.seed,
            ref.id,  # type: ignore[arg-type]
        )
        agent: SingleStockAgent
        if ref.kind == "llm":
            assert ctx.model is not None and ctx.agent is not None
            agent = SingleStockLLMAgent(ctx.model, options.nudges, ref.agent, seed=ref.seed)
            extra: dict[str, Any] = {"model": ctx.agent.model_config_().model_dump(mode="json")}
        else:
            assert ctx.agent is not None
            agent, extra = build_baseline(ctx.agent)
        journal = ctx.journal()
        for line in journal.restore():
            episode.apply(StepDecision(**line["decision"]))
        while not episode.done:
            decision = await agent.decide(episode.context())
            journal.append(
                episode.step, {"step": episode.step, "decision": decision.record()}, decision.trace
            )
            episode.apply(decision)
            ctx.on_step()
        series = episode.series()
        write_episode(ctx.folder, series, episode.scores())
        if ref.kind == "llm":
            extra["tokens"] = int(series[["tokens_in", "tokens_out"]].fillna(0).to_numpy().sum())
        return ref.record(
            NAME,
            "done",
            symbol=task.symbol,
            persona=task.persona,
            cell=task.cell,
            initial_cash=INITIAL_WEALTH,
            n_steps=episode.total,
            episode_length=episode.total,
            nudges=options.nudges,
            price_mode=episode.price_mode,
            prompt_version=prompts.version,
            prompt_sha256=prompts.sha256,
            decision_days={
                "first": str(episode.plan.days[0]),
                "last": str(episode.plan.days[-1]),
            },
            **extra,
        )


BENCHMARK = SingleStockBenchmark()
"""The registered instance."""
