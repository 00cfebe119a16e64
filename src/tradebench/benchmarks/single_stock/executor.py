"""`tradebench run` for `benchmark: single_stock` specs: grid, episodes, resume, summary.

Grid: every task (windows x symbols x personas) for every agent and seed; LLM agents also
for every mask level (baselines read no text, so masks do not apply to them). Episodes
reuse the run folder layout (`episodes/<id>/`: episode.json, steps.parquet, metrics.json,
trace.jsonl) and resume per step from `progress.jsonl`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tradebench.benchmarks.single_stock.agents import BASELINES, SingleStockAgent
from tradebench.benchmarks.single_stock.checkpoint import StepLog
from tradebench.benchmarks.single_stock.config import SingleStockOptions, Task, expand_tasks
from tradebench.benchmarks.single_stock.episode import SingleStockEpisode, plan_episode
from tradebench.benchmarks.single_stock.llm_agent import SingleStockLLMAgent
from tradebench.benchmarks.single_stock.prompt_files import PromptSet, load_prompts
from tradebench.benchmarks.single_stock.scoring import score_episode
from tradebench.benchmarks.single_stock.store import write_episode
from tradebench.data.dataset import Dataset
from tradebench.masking import MaskLevel, build_masker
from tradebench.runs.spec import AgentEntry, RunSpec
from tradebench.runs.store import write_json

if TYPE_CHECKING:
    from tradebench.runs.runner import RunProgress

NOT_APPLICABLE = "n/a"


@dataclass(frozen=True)
class SingleStockEpisodeRef:
    """One episode of the grid: an agent on a task under a mask and seed."""

    id: str
    agent: str
    kind: Literal["llm", "baseline"]
    mask: str
    seed: int
    task: Task


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


def expand(spec: RunSpec, options: SingleStockOptions) -> list[SingleStockEpisodeRef]:
    """Every episode in a stable order: tasks x agents x seeds (x masks for LLMs)."""
    windows = [(w.start, w.end) for w in spec.windows]
    out: list[SingleStockEpisodeRef] = []
    for task in expand_tasks(options.symbols, windows, options.personas):
        for a in spec.agents:
            for seed in spec.seeds:
                masks = spec.masks if a.is_llm else [NOT_APPLICABLE]
                for mask in masks:
                    head = f"{a.name}_{task.persona}" + (f"_{mask}" if a.is_llm else "")
                    ident = _slug(f"{head}_{task.cell}_s{seed}")
                    kind: Literal["llm", "baseline"] = "llm" if a.is_llm else "baseline"
                    out.append(SingleStockEpisodeRef(ident, a.name, kind, mask, seed, task))
    return out


def episode_meta(
    ep: SingleStockEpisodeRef, status: str, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`episode.json`: the summary's fields (persona as `mode`) plus the task."""
    return {
        "benchmark": "single_stock",
        "episode_id": ep.id,
        "agent": ep.agent,
        "kind": ep.kind,
        "mode": ep.task.persona,
        "mask": ep.mask,
        "seed": ep.seed,
        "symbol": ep.task.symbol,
        "persona": ep.task.persona,
        "window": {"start": str(ep.task.start), "end": str(ep.task.end)},
        "initial_cash": 1.0,
        "status": status,
        **(extra or {}),
    }


@dataclass(frozen=True)
class EpisodeSetup:
    """What every episode of a run shares."""

    ds: Dataset
    options: SingleStockOptions
    prompts: PromptSet


def new_episode(setup: EpisodeSetup, ep: SingleStockEpisodeRef) -> SingleStockEpisode:
    """A fresh episode for `ep` (masker seeded by run seed and episode id)."""
    plan = plan_episode(setup.ds, ep.task, setup.options.episode_length)
    level: MaskLevel = "bright" if ep.mask == NOT_APPLICABLE else ep.mask  # type: ignore[assignment]
    panel = setup.ds.panel
    masker = build_masker(level, panel.symbols, panel.dates, plan.days[0], ep.seed, ep.id)
    return SingleStockEpisode(
        setup.ds, plan, masker, setup.prompts, setup.options.price_mode, reply_format="tool"
    )


async def run_episode(
    setup: EpisodeSetup,
    ep: SingleStockEpisodeRef,
    agent: SingleStockAgent,
    folder: Path,
    extra: dict[str, Any],
    on_step: Callable[[], None] = lambda: None,
) -> SingleStockEpisode:
    """Run (or resume) one episode to the end and write its files."""
    episode = new_episode(setup, ep)
    meta = {
        **extra,
        "episode_length": episode.total,
        "nudges": setup.options.nudges,
        "price_mode": setup.options.price_mode,
        "prompt_version": setup.prompts.version,
        "prompt_sha256": setup.prompts.sha256,
        "decision_days": {"first": str(episode.plan.days[0]), "last": str(episode.plan.days[-1])},
    }
    write_json(folder / "episode.json", episode_meta(ep, "running", meta))
    log = StepLog(folder)
    for decision in log.restore():
        episode.apply(decision)
    while not episode.done:
        decision = await agent.decide(episode.context())
        log.append(episode.step, decision)
        episode.apply(decision)
        on_step()
    series = episode.series()
    ledger = episode.ledger()
    scores = score_episode(ledger.earned, ledger.asset_log_returns, series["valid"].to_numpy())
    write_episode(folder, series, scores)
    tokens = series[["tokens_in", "tokens_out"]].fillna(0).to_numpy().sum()
    done_meta = {**meta, "tokens": int(tokens)} if ep.kind == "llm" else meta
    write_json(folder / "episode.json", episode_meta(ep, "done", done_meta))
    return episode


def build_baseline(entry: AgentEntry) -> tuple[SingleStockAgent, dict[str, Any]]:
    """A registered single-stock baseline and its record (name and arguments)."""
    agent, built = BASELINES.build(entry.baseline or "", **entry.args)
    return agent, {"baseline": {"name": built.name, "args": built.args}}


async def run_llm(
    spec: RunSpec,
    setup: EpisodeSetup,
    run_dir: Path,
    todo: list[SingleStockEpisodeRef],
    progress: RunProgress,
) -> None:
    """Model episodes concurrently under the run's cache and budget; budget stops cleanly."""
    from tradebench.runs.llm_episodes import run_model_episodes
    from tradebench.runs.runner import EPISODES

    entries = {a.name: a for a in spec.agents}

    async def one(ep: SingleStockEpisodeRef, models: dict[str, Any]) -> None:
        agent = SingleStockLLMAgent(models[ep.agent], setup.options.nudges, ep.agent)
        extra = {"model": entries[ep.agent].model_config_().model_dump(mode="json")}
        done = await run_episode(
            setup, ep, agent, run_dir / EPISODES / ep.id, extra, lambda: progress.bump(steps=1)
        )
        tokens = done.series()[["tokens_in", "tokens_out"]].fillna(0).to_numpy().sum()
        progress.bump(episodes=1, tokens=int(tokens))

    await run_model_episodes(spec, run_dir, todo, one)


async def run_single_stock(spec: RunSpec, run_dir: Path, progress: RunProgress) -> Path:
    """Run every unfinished single-stock episode of `spec`; returns the summary path."""
    from tradebench.runs.runner import EPISODES, cached_dataset, is_done, resolve_dataset
    from tradebench.runs.summary import write_summary

    options = spec.single_stock or SingleStockOptions()
    run_dir.mkdir(parents=True, exist_ok=True)
    dataset = resolve_dataset(spec.dataset, run_dir)
    (run_dir / "spec.yaml").write_text(spec.dump(), encoding="utf-8")
    setup = EpisodeSetup(
        cached_dataset(str(dataset)), options, load_prompts(options.prompt_version)
    )
    episodes = expand(spec, options)
    for ep in episodes:  # fail fast on a bad window, symbol or length, before any call
        plan_episode(setup.ds, ep.task, options.episode_length)
    entries = {a.name: a for a in spec.agents}
    baselines = {a.name: build_baseline(a) for a in spec.agents if not a.is_llm}
    todo = [ep for ep in episodes if not is_done(run_dir / EPISODES / ep.id)]
    progress.episodes_total = len(episodes)
    progress.bump(episodes=len(episodes) - len(todo))
    for ep in (e for e in todo if e.kind == "baseline"):
        agent, record = baselines[entries[ep.agent].name]
        await run_episode(
            setup, ep, agent, run_dir / EPISODES / ep.id, record, lambda: progress.bump(steps=1)
        )
        progress.bump(episodes=1)
    await run_llm(spec, setup, run_dir, [e for e in todo if e.kind == "llm"], progress)
    return write_summary(run_dir)
