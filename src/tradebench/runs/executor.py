"""Execute a run spec for a benchmark: plan, resume, schedule, summarise.

The executor knows no benchmark by name. It resolves the data, validates the benchmark's
options, writes the resolved `spec.yaml`, asks the benchmark for its episodes and skips
the finished ones (an unfinished one continues from its journal). Episodes without a model
(baselines, references) run in a process pool; model episodes run concurrently on one
event loop through one `ModelPool` (shared cache and budget, bounded concurrency, clean
budget stop). Every episode's record is written here, and the summary last, so a killed
run ends identical to an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tradebench.data.dataset import Dataset, load_dataset
from tradebench.data.synth import SynthConfig, synthesize
from tradebench.errors import ConfigError
from tradebench.runs.guard import check_spec, die_with_parent, run_lock
from tradebench.runs.models import ModelPool
from tradebench.runs.protocol import Benchmark, EpisodeContext, EpisodeRef
from tradebench.runs.records import (
    BUDGET_FILE,
    CACHE_FILE,
    SPEC_FILE,
    EpisodeRecord,
    episode_folder,
)
from tradebench.runs.spec import RunSpec
from tradebench.runs.store import read_episode_record, write_episode_record
from tradebench.runs.summary import write_summary

log = logging.getLogger("tradebench.runs")
INLINE_JOBS = 2
"""Up to this many model-free episodes run in this process: a pool costs more than it saves."""
WORKERS = 2
"""Processes of the pool for model-free episodes."""


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
            synthesize(out, SynthConfig(seed=seed))
        return out
    path = Path(name)
    if not (path / "manifest.json").exists():
        raise ConfigError(f"dataset {name!r} is not a dataset folder (no manifest.json)")
    return path


@lru_cache(maxsize=4)
def cached_dataset(path: str) -> Dataset:
    """A dataset loaded (and its panel built) once per process."""
    ds = load_dataset(path)
    ds.panel  # noqa: B018  (build once per process)
    return ds


def is_done(folder: Path) -> bool:
    """Whether an episode folder holds a finished episode."""
    record = read_episode_record(folder)
    return record is not None and record.status == "done"


@dataclass(frozen=True)
class Plan:
    """A resolved run: the data, the benchmark's options, every episode and those to run."""

    spec: RunSpec
    dataset: Path
    options: Any
    episodes: list[EpisodeRef]
    todo: list[EpisodeRef]


def plan(benchmark: Benchmark, spec: RunSpec, run_dir: Path, add_cells: bool = False) -> Plan:
    """Resolve the data and options, check the folder was written with the same spec, write
    the resolved `spec.yaml`, list what is left.

    Raises:
        ConfigError: Bad options, data or grid cells (before any model call), or a spec that
            differs from the folder's (unless only new cells are added with `add_cells`).
    """
    options = spec.options_as(benchmark.options_model)
    run_dir.mkdir(parents=True, exist_ok=True)
    dataset = resolve_dataset(spec.dataset, run_dir)
    modes = list(spec.modes) or list(benchmark.modes)
    resolved = spec.model_copy(update={"options": options.model_dump(mode="json"), "modes": modes})
    check_spec(run_dir, resolved, add_cells)
    (run_dir / SPEC_FILE).write_text(resolved.dump(), encoding="utf-8")
    episodes = benchmark.expand(resolved, options, cached_dataset(str(dataset)))
    todo = [ep for ep in episodes if not is_done(episode_folder(run_dir, ep.id))]
    return Plan(resolved, dataset, options, episodes, todo)


def _context(
    plan: Plan, run_dir: Path, ref: EpisodeRef, model: Any = None, on_step: Any = None
) -> EpisodeContext:
    names = {a.name: a for a in plan.spec.agents}
    folder = episode_folder(run_dir, ref.id)
    folder.mkdir(parents=True, exist_ok=True)
    return EpisodeContext(
        spec=plan.spec,
        options=plan.options,
        dataset=cached_dataset(str(plan.dataset)),
        run_dir=run_dir,
        folder=folder,
        agent=names.get(ref.agent),
        model=model,
        on_step=on_step or (lambda: None),
    )


async def _run_one(benchmark: Benchmark, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
    """Run one episode and write its record (`running` first, then what it returns)."""
    write_episode_record(ctx.folder, ref.record(benchmark.name, "running"))
    record = await benchmark.run_episode(ref, ctx)
    write_episode_record(ctx.folder, record)
    return record


def run_in_worker(benchmark: Benchmark, plan: Plan, run_dir: Path, ref: EpisodeRef) -> int:
    """Run one model-free episode (in a worker process or a thread); returns its steps."""
    record = asyncio.run(_run_one(benchmark, ref, _context(plan, run_dir, ref)))
    return int(record.n_steps or 0)


async def run_local(
    benchmark: Benchmark, plan: Plan, run_dir: Path, todo: list[EpisodeRef], progress: RunProgress
) -> None:
    """Model-free episodes in a process pool (inline when only a few)."""
    loop = asyncio.get_running_loop()
    if len(todo) <= INLINE_JOBS:
        for ref in todo:
            steps = await loop.run_in_executor(None, run_in_worker, benchmark, plan, run_dir, ref)
            progress.bump(episodes=1, steps=steps)
        return
    with ProcessPoolExecutor(max_workers=WORKERS, initializer=die_with_parent) as pool:
        futures = [
            loop.run_in_executor(pool, run_in_worker, benchmark, plan, run_dir, ref) for ref in todo
        ]
        for fut in asyncio.as_completed(futures):
            progress.bump(episodes=1, steps=await fut)


async def run_models(
    benchmark: Benchmark, plan: Plan, run_dir: Path, todo: list[EpisodeRef], progress: RunProgress
) -> None:
    """Model episodes on this loop, `concurrency` at a time, through one model pool."""
    if not todo:
        return
    spec = plan.spec
    pool = ModelPool(
        budget=spec.budget,
        budget_file=run_dir / BUDGET_FILE,
        cache_path=Path(spec.cache.path) if spec.cache.path else run_dir / CACHE_FILE,
        cache_mode=spec.cache.mode,
        concurrency=spec.concurrency,
        resume_hint=(
            "finished steps are saved; raise the budget in the spec and rerun the same "
            "command to continue"
        ),
    )
    models = {a.name: pool.model(a.model_config_(), a.retry_policy()) for a in spec.llm_agents()}

    async def one(ref: EpisodeRef) -> None:
        ctx = _context(plan, run_dir, ref, models[ref.agent], lambda: progress.bump(steps=1))
        record = await _run_one(benchmark, ref, ctx)
        progress.bump(episodes=1, tokens=int(record.tokens or 0))

    with pool:
        await pool.map(todo, one)


async def execute(
    benchmark: Benchmark,
    spec: RunSpec,
    run_dir: Path,
    progress: RunProgress | None = None,
    add_cells: bool = False,
) -> Path:
    """Run every unfinished episode of `spec` into `run_dir` (holding its lock); returns the
    summary path.

    Raises:
        ConfigError: Bad spec, options, data or cells (before any model call), a folder in
            use by another run, or a folder written with another spec.
        BudgetExceeded: The budget stopped the run cleanly; rerun to continue.
    """
    with run_lock(Path(run_dir)):
        return await _execute(benchmark, spec, Path(run_dir), progress, add_cells)


async def _execute(
    benchmark: Benchmark,
    spec: RunSpec,
    run_dir: Path,
    progress: RunProgress | None,
    add_cells: bool,
) -> Path:
    progress = progress or RunProgress()
    for line in spec.sampling_warnings():
        log.warning(line)
    resolved = plan(benchmark, spec, Path(run_dir), add_cells)
    progress.episodes_total = len(resolved.episodes)
    progress.bump(episodes=len(resolved.episodes) - len(resolved.todo))
    local = [ep for ep in resolved.todo if ep.kind != "llm"]
    models = [ep for ep in resolved.todo if ep.kind == "llm"]
    await asyncio.gather(
        run_local(benchmark, resolved, Path(run_dir), local, progress),
        run_models(benchmark, resolved, Path(run_dir), models, progress),
    )
    return write_summary(run_dir, benchmark.summary_row)
