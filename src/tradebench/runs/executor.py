"""Execute a run spec for a benchmark: plan, resume, schedule, summarise.

The executor knows no benchmark by name. It resolves the data, validates the benchmark's
options, writes the resolved `spec.yaml`, asks the benchmark for its episodes and skips
the finished ones (an unfinished one continues from its journal). Episodes without a model
(baselines, references) run in a process pool; model episodes run concurrently on one
event loop through one `ModelPool` (shared cache and budget, bounded concurrency, clean
budget stop). Every episode's record is written here, and the summary last, so a killed
run ends identical to an uninterrupted one. With `executor: ray` the same plan runs on a
Ray cluster instead (`runs.ray.executor`); everything before and after is this module's.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tradebench.data.synth import SynthConfig, synthesize
from tradebench.errors import ConfigError
from tradebench.llm.observed import ObservedModel
from tradebench.runs.axes import resolve_axes, undeclared_axes
from tradebench.runs.dataset_cache import cached_dataset
from tradebench.runs.guard import check_folder, die_with_parent, run_lock, write_guard
from tradebench.runs.models import ModelPool
from tradebench.runs.progress import RunProgress
from tradebench.runs.protocol import Benchmark, EpisodeContext, EpisodeRef
from tradebench.runs.ray.executor import RayRun, run_on_ray
from tradebench.runs.records import (
    BUDGET_FILE,
    CACHE_FILE,
    EpisodeRecord,
    episode_folder,
)
from tradebench.runs.spec import RunSpec
from tradebench.runs.store import read_episode_record, write_episode_record
from tradebench.runs.summary import benchmark_columns, write_summary
from tradebench.runs.trace import compact_trace

log = logging.getLogger("tradebench.runs")
INLINE_JOBS = 2
"""Up to this many model-free episodes run in this process: a pool costs more than it saves."""
WORKERS = 2
"""Processes of the pool for model-free episodes."""
__all__ = ["Plan", "RunProgress", "cached_dataset", "execute", "plan", "resolve_dataset"]


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
    """Resolve the data, options (a benchmark's `resolve_options`, when it has one, sets the
    defaults that depend on the grid and the data) and axes (an omitted axis as the
    benchmark's default), check
    the folder was written with the same spec, write the resolved `spec.yaml`, list what is
    left.

    Raises:
        ConfigError: Bad options, axis values, data or grid cells (before any model call), or
            a spec that
            differs from the folder's (unless only new cells are added with `add_cells`).
    """
    options = spec.options_as(benchmark.options_model)
    axes = resolve_axes(benchmark, {"modes": spec.modes, "masks": spec.masks})
    run_dir.mkdir(parents=True, exist_ok=True)
    dataset = resolve_dataset(spec.dataset, run_dir)
    data = cached_dataset(str(dataset))
    resolve_options = getattr(benchmark, "resolve_options", None)
    if resolve_options is not None:  # defaults that depend on the grid and the data
        options = resolve_options(spec.model_copy(update=axes), options, data)
    resolved = spec.model_copy(update={"options": options.model_dump(mode="json"), **axes})
    hints = getattr(benchmark, "resume_hints", None) or {}
    check_folder(run_dir, resolved, data.manifest, add_cells, undeclared_axes(benchmark), hints)
    episodes = benchmark.expand(resolved, options, data)
    write_guard(run_dir, resolved, data.manifest)  # only a spec that expanded claims the folder
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
    """Run one episode and write its record (`running` first, then what it returns); a
    done episode's trace is compacted to zstd before it is marked done."""
    write_episode_record(ctx.folder, ref.record(benchmark.name, "running"))
    record = await benchmark.run_episode(ref, ctx)
    if record.status == "done":
        compact_trace(ctx.folder)
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
            progress.move(1, "queued", "running")
            steps = await loop.run_in_executor(None, run_in_worker, benchmark, plan, run_dir, ref)
            progress.finish("running", steps=steps)
        return
    with ProcessPoolExecutor(max_workers=WORKERS, initializer=die_with_parent) as pool:
        futures = [
            loop.run_in_executor(pool, run_in_worker, benchmark, plan, run_dir, ref) for ref in todo
        ]
        progress.move(len(todo), "queued", "running")
        for fut in asyncio.as_completed(futures):
            progress.finish("running", steps=await fut)


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
    models = {
        a.name: ObservedModel(
            pool.model(a.model_config_(), a.retry_policy(), a.limits),
            lambda reply: progress.called(reply.latency_s, pool.limiter_line()),
        )
        for a in spec.llm_agents()
    }

    async def one(ref: EpisodeRef) -> None:
        progress.move(1, "queued", "running")
        ctx = _context(plan, run_dir, ref, models[ref.agent], lambda: progress.bump(steps=1))
        record = await _run_one(benchmark, ref, ctx)
        progress.finish("running", tokens=int(record.tokens or 0))

    with pool:
        await pool.map(todo, one)


async def execute(
    benchmark: Benchmark,
    spec: RunSpec,
    run_dir: Path,
    progress: RunProgress | None = None,
    add_cells: bool = False,
    ray_address: str | None = None,
) -> Path:
    """Run every unfinished episode of `spec` into `run_dir` (holding its lock); returns the
    summary path. With `executor: ray` the episodes run on the Ray cluster at `ray_address`
    (None: `RAY_ADDRESS`, else a local one).

    Raises:
        ConfigError: Bad spec, options, data or cells (before any model call), a folder in
            use by another run, or a folder written with another spec.
        BudgetExceeded: The budget stopped the run cleanly; rerun to continue.
    """
    with run_lock(Path(run_dir)):
        return await _execute(benchmark, spec, Path(run_dir), progress, add_cells, ray_address)


async def _execute(
    benchmark: Benchmark,
    spec: RunSpec,
    run_dir: Path,
    progress: RunProgress | None,
    add_cells: bool,
    ray_address: str | None,
) -> Path:
    progress = progress or RunProgress()
    for line in spec.sampling_warnings():
        log.warning(line)
    resolved = plan(benchmark, spec, Path(run_dir), add_cells)
    progress.episodes_total = len(resolved.episodes)
    progress.bump(episodes=len(resolved.episodes) - len(resolved.todo))
    progress.move(len(resolved.todo), None, "queued")
    if resolved.spec.executor == "ray":
        run = RayRun(benchmark, resolved.spec, resolved.options, resolved.dataset, run_dir)
        await run_on_ray(run, resolved.todo, progress, ray_address)
        return write_summary(run_dir, benchmark.summary_row, benchmark_columns(benchmark))
    local = [ep for ep in resolved.todo if ep.kind != "llm"]
    models = [ep for ep in resolved.todo if ep.kind == "llm"]
    await asyncio.gather(
        run_local(benchmark, resolved, Path(run_dir), local, progress),
        run_models(benchmark, resolved, Path(run_dir), models, progress),
    )
    return write_summary(run_dir, benchmark.summary_row, benchmark_columns(benchmark))
