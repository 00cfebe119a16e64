"""Execute a run spec: expand the grid, run episodes concurrently, resume, summarise.

Model episodes run concurrently on one asyncio loop (bounded by `concurrency`); baseline
episodes run in a process pool. Finished episodes are skipped on a rerun and unfinished
ones continue from their last completed step, so a killed run ends identical to an
uninterrupted one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tradebench.data.dataset import Dataset, load_dataset
from tradebench.errors import ConfigError
from tradebench.market.rules import MarketRules
from tradebench.runs.backtest import benchmark_result, run_backtest, trading_days
from tradebench.runs.checkpoint import Checkpoint
from tradebench.runs.execute import score
from tradebench.runs.spec import AgentEntry, Episode, RunSpec, expand
from tradebench.runs.store import write_json, write_run

EPISODES = "episodes"


@dataclass
class RunProgress:
    """Live counters for the progress display."""

    episodes_total: int = 0
    episodes_done: int = 0
    steps_done: int = 0
    tokens: int = 0
    listeners: list[Callable[[RunProgress], None]] = field(default_factory=list)

    def bump(self, *, episodes: int = 0, steps: int = 0, tokens: int = 0) -> None:
        """Add to the counters and notify listeners."""
        self.episodes_done += episodes
        self.steps_done += steps
        self.tokens += tokens
        for listener in self.listeners:
            listener(self)


def resolve_dataset(name: str, run_dir: Path) -> Path:
    """A dataset folder, or `synthetic:cn[:SEED]` generated once under RUN_DIR/data/."""
    if name.startswith("synthetic:"):
        parts = name.split(":")
        if parts[1] != "cn" or len(parts) > 3:
            raise ConfigError(f"dataset {name!r}: use synthetic:cn or synthetic:cn:SEED")
        seed = int(parts[2]) if len(parts) == 3 else 0
        out = run_dir / "data" / f"synthetic-cn-seed{seed}"
        if not (out / "manifest.json").exists():
            from tradebench.data.synth import SynthConfig, synthesize

            synthesize(out, SynthConfig(seed=seed))
        return out
    path = Path(name)
    if not (path / "manifest.json").exists():
        raise ConfigError(f"dataset {name!r} is not a dataset folder (no manifest.json)")
    return path


def step_cap(*caps: int | None) -> int | None:
    """The tightest of the given step caps (None = no cap)."""
    given = [c for c in caps if c is not None]
    return min(given) if given else None


def episode_window(ds: Dataset, ep: Episode, max_steps: int | None) -> tuple[str, str]:
    """The episode's (start, end), cut to `max_steps` trading days when set."""
    start, end = str(ep.window.start), str(ep.window.end)
    if max_steps is not None:
        days = trading_days(ds.panel, start, end)[:max_steps]
        end = str(ds.panel.dates[days[-1]])
    return start, end


def episode_meta(ep: Episode, status: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `episode.json` payload of an episode in a given status."""
    return {
        "episode_id": ep.id,
        "agent": ep.agent,
        "kind": ep.kind,
        "mode": ep.mode,
        "mask": ep.mask,
        "seed": ep.seed,
        "window": {"start": str(ep.window.start), "end": str(ep.window.end)},
        "status": status,
        **(extra or {}),
    }


def is_done(folder: Path) -> bool:
    """Whether an episode folder holds a finished episode."""
    path = folder / "episode.json"
    return path.exists() and json.loads(path.read_text()).get("status") == "done"


def finish(folder: Path, ep: Episode, result: Any, rules: MarketRules, extra: dict) -> None:
    """Score and write the episode's files, then mark it done."""
    info = {
        "agent": ep.agent,
        "start": str(ep.window.start),
        "end": str(ep.window.end),
        "initial_cash": result.initial_cash,
        "benchmark_start": result.benchmark_start,
        "rules": rules.__dict__,
    }
    write_run(folder, result, score(result), info)
    write_json(folder / "episode.json", episode_meta(ep, "done", extra))


@lru_cache(maxsize=4)
def cached_dataset(path: str) -> Dataset:
    """A dataset loaded (and its panel built) once per process."""
    ds = load_dataset(path)
    ds.panel  # noqa: B018  (build once per process)
    return ds


def run_baseline_episode(
    dataset: str,
    ep: Episode,
    entry: AgentEntry,
    start: str,
    end: str,
    initial_cash: float,
    folder: str,
) -> int:
    """Run one baseline or benchmark episode (in a worker process); returns its steps."""
    from tradebench.agents import baselines  # noqa: F401  (register the baselines)
    from tradebench.agents.factor import agent as _factor  # noqa: F401
    from tradebench.agents.protocol import AGENTS

    ds = cached_dataset(dataset)
    rules = MarketRules.for_market(ds.market, initial_cash=initial_cash)
    out = Path(folder)
    write_json(out / "episode.json", episode_meta(ep, "running"))
    if ep.kind == "benchmark":
        result = benchmark_result(ds, start, end, initial_cash)
        extra: dict[str, Any] = {}
    else:
        args = (
            {"lot_size": rules.lot_size, **entry.args} if entry.baseline != "cash" else entry.args
        )
        agent, built = AGENTS.build(entry.baseline, **args)
        result = asyncio.run(run_backtest(ds, agent, start, end, rules, checkpoint=Checkpoint(out)))
        extra = {"baseline": {"name": built.name, "args": built.args}}
    finish(out, ep, result, rules, extra)
    return len(result.steps)


def plan(spec: RunSpec, run_dir: Path) -> tuple[Path, list[Episode]]:
    """Resolve the dataset, write the resolved spec, and list the episodes still to run."""
    run_dir.mkdir(parents=True, exist_ok=True)
    dataset = resolve_dataset(spec.dataset, run_dir)
    (run_dir / "spec.yaml").write_text(spec.dump(), encoding="utf-8")
    episodes = expand(spec)
    return dataset, episodes


async def run_baselines(
    spec: RunSpec, dataset: Path, run_dir: Path, todo: list[Episode], progress: RunProgress
) -> None:
    """Baseline and benchmark episodes in a process pool (inline when only a few)."""
    entries = {a.name: a for a in spec.agents}
    ds = cached_dataset(str(dataset))
    jobs = []
    for ep in todo:
        entry = entries.get(ep.agent, AgentEntry(name="benchmark", baseline="cash"))
        start, end = episode_window(ds, ep, step_cap(spec.options.max_steps, entry.max_steps))
        jobs.append(
            (
                str(dataset),
                ep,
                entry,
                start,
                end,
                spec.options.initial_cash,
                str(run_dir / EPISODES / ep.id),
            )
        )
    loop = asyncio.get_running_loop()
    if len(jobs) <= 2:  # a pool costs more than it saves
        for job in jobs:
            progress.bump(
                episodes=1, steps=await loop.run_in_executor(None, run_baseline_episode, *job)
            )
        return
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = [loop.run_in_executor(pool, run_baseline_episode, *job) for job in jobs]
        for fut in asyncio.as_completed(futures):
            progress.bump(episodes=1, steps=await fut)


async def run_spec(spec: RunSpec, run_dir: Path, progress: RunProgress | None = None) -> Path:
    """Run every unfinished episode of `spec` into `run_dir`; returns the summary path."""
    from tradebench.runs.llm_episodes import run_llm_episodes
    from tradebench.runs.summary import write_summary

    progress = progress or RunProgress()
    if spec.benchmark == "single_stock":
        from tradebench.benchmarks.single_stock.executor import run_single_stock

        return await run_single_stock(spec, run_dir, progress)
    dataset, episodes = plan(spec, run_dir)
    todo = [ep for ep in episodes if not is_done(run_dir / EPISODES / ep.id)]
    progress.episodes_total = len(episodes)
    progress.bump(episodes=len(episodes) - len(todo))
    baselines = [ep for ep in todo if ep.kind != "llm"]
    models = [ep for ep in todo if ep.kind == "llm"]
    await asyncio.gather(
        run_baselines(spec, dataset, run_dir, baselines, progress),
        run_llm_episodes(spec, dataset, run_dir, models, progress),
    )
    return write_summary(run_dir)
