"""The Ray executor: the same plan, the same episodes, run across a cluster.

Everything above it is the local executor's (plan, resume, the folder lock, the summary).
Here the driver ships the dataset to the object store once, starts the run's two keepers
(budget and cache, `ray.services`), and submits every unfinished episode: model-free ones
as one-CPU Ray tasks, model ones to a pool of async `ModelWorker` actors, at most the
spec's `concurrency` in flight. Each episode streams its journal back step by step and its
files at the end; the driver alone writes them into the run folder. When a worker (or its
node) dies under an episode, the driver resubmits it from the journal it holds, i.e. from
the episode's last completed step; an episode lost `MAX_ATTEMPTS` times fails the run.
"""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tradebench.errors import BudgetExceeded, TradebenchError
from tradebench.files import read_model, write_bytes_atomic, write_text_atomic
from tradebench.llm.budget import BudgetState
from tradebench.runs.journal import Journal
from tradebench.runs.models import BudgetStop, first_error
from tradebench.runs.progress import Retry, RunProgress
from tradebench.runs.protocol import Benchmark, EpisodeRef
from tradebench.runs.ray.cluster import DatasetShipment, connect, require_ray, ship_dataset
from tradebench.runs.ray.services import Services
from tradebench.runs.ray.worker import (
    JOURNAL_FILES,
    EpisodeJob,
    EpisodeResult,
    ModelWorker,
    StepDelta,
    cpu_episode,
)
from tradebench.runs.records import BUDGET_FILE, CACHE_FILE, PROGRESS_FILE, episode_folder
from tradebench.runs.spec import RunSpec
from tradebench.runs.store import write_episode_record

log = logging.getLogger("tradebench.runs")
MAX_ATTEMPTS = 3
"""Attempts per episode when workers die under it (waits for a restarting actor aside)."""
RESTART_POLL_S = 0.5
"""Wait between submissions to a model actor that Ray is restarting."""
MAX_RESTART_WAITS = 240
"""Resubmissions to a restarting actor before the episode fails (about two minutes)."""
CLOSE_TIMEOUT_S = 30.0
"""How long the driver waits for a model actor to give its budget lease back."""
WORKER_PREFIX = "tradebench-model-"
"""Name prefix of the run's model actors (`ray list actors` shows them)."""
RESUME_HINT = (
    "finished steps are saved; raise the budget in the spec and rerun the same command to continue"
)


@dataclass(frozen=True)
class RayRun:
    """What the driver submits from: the resolved run and where it goes."""

    benchmark: Benchmark
    spec: RunSpec
    options: Any
    dataset: Path
    run_dir: Path


def lost_worker_errors() -> tuple[type[BaseException], ...]:
    """Ray's errors for a worker, actor or node that died (the episode may be retried)."""
    exc = require_ray().exceptions
    return (
        exc.RayActorError,
        exc.WorkerCrashedError,
        exc.NodeDiedError,
        exc.ObjectLostError,
        exc.OwnerDiedError,
    )


def checkpoint(folder: Path) -> dict[str, bytes]:
    """The episode's journal as the driver holds it, trimmed to its complete steps."""
    Journal(folder).restore()
    return {n: (folder / n).read_bytes() for n in JOURNAL_FILES if (folder / n).exists()}


def append_delta(folder: Path, delta: StepDelta) -> None:
    """Add a step's journal bytes to the driver's copy, trace first, written through to
    the operating system as the local journal writes them (`runs.journal`)."""
    for name in JOURNAL_FILES:
        data = delta.appended.get(name)
        if not data:
            continue
        with open(folder / name, "ab") as fh:
            fh.write(data)


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write a finished episode's files into its folder, each replaced atomically; the
    streamed journal files it no longer has (a trace compacted to zstd) are removed."""
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)
    for name in JOURNAL_FILES:
        if name not in files:
            (folder / name).unlink(missing_ok=True)


@dataclass
class WorkerPool:
    """The run's model actors and how many episodes each has in flight."""

    actors: list[Any]
    load: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, spec: RunSpec, services: Services, token: str) -> WorkerPool:
        """One async actor per cluster CPU (at most `concurrency`), sharing the slots."""
        ray = require_ray()
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n = max(1, min(cpus, spec.concurrency))
        slots = math.ceil(spec.concurrency / n) + 1  # one more for pid/health calls
        actor = ray.remote(ModelWorker)
        opts = {
            "num_cpus": 0,
            "max_concurrency": slots,
            "max_restarts": MAX_ATTEMPTS,
            "max_task_retries": 0,
            "scheduling_strategy": "SPREAD",
        }
        actors = [
            actor.options(name=f"{WORKER_PREFIX}{token}-{i}", **opts).remote(spec, services, i)
            for i in range(n)
        ]
        return cls(actors, [0] * n)

    def pick(self) -> int:
        """The least-loaded actor's index."""
        return min(range(len(self.actors)), key=self.load.__getitem__)

    def stop(self) -> None:
        """Have every live actor settle and give its budget lease back, then end them all
        (a dead one's lease is freed by `Services.release_all`)."""
        ray = require_ray()
        closing = [actor.close.remote() for actor in self.actors]
        for ref in closing:
            try:
                ray.get(ref, timeout=CLOSE_TIMEOUT_S)
            except ray.exceptions.RayError as exc:  # dead, restarting, or too slow
                log.warning("a model worker could not give its lease back: %s", type(exc).__name__)
        for actor in self.actors:
            ray.kill(actor)


class Driver:
    """Submits episodes, writes what streams back, retries lost ones."""

    def __init__(
        self,
        run: RayRun,
        shipment: DatasetShipment,
        progress: RunProgress,
        workers: WorkerPool | None,
    ) -> None:
        """Submit `run`'s episodes with `shipment`; `workers` run the model episodes."""
        self.run = run
        self.shipment = shipment
        self.progress = progress
        self.workers = workers
        self.gate = asyncio.Semaphore(run.spec.concurrency)
        self.lost = lost_worker_errors()
        self.restarting = require_ray().exceptions.ActorUnavailableError

    def _job(self, ref: EpisodeRef, folder: Path) -> EpisodeJob:
        r = self.run
        return EpisodeJob(r.benchmark, r.spec, r.options, ref, self.shipment, checkpoint(folder))

    def _submit(self, job: EpisodeJob) -> tuple[Any, int | None]:
        if job.ref.kind != "llm":
            task = require_ray().remote(cpu_episode).options(num_cpus=1, max_retries=0)
            return task.remote(job), None
        assert self.workers is not None
        index = self.workers.pick()
        self.workers.load[index] += 1
        return self.workers.actors[index].episode.remote(job), index

    async def episode(self, ref: EpisodeRef) -> None:
        """Run one episode to its end (model episodes inside the concurrency gate)."""
        if ref.kind == "llm":
            async with self.gate:
                await self._attempts(ref)
        else:
            await self._attempts(ref)

    async def _attempts(self, ref: EpisodeRef) -> None:
        folder = episode_folder(self.run.run_dir, ref.id)
        folder.mkdir(parents=True, exist_ok=True)
        write_episode_record(folder, ref.record(self.run.benchmark.name, "running"))
        self.progress.move(1, "queued", "running")
        job = self._job(ref, folder)
        lost, waits = 0, 0
        while True:
            try:
                result = await self._stream(job, folder)
            except self.lost as exc:
                restarting = isinstance(exc, self.restarting)  # Ray is bringing it back
                lost += not restarting
                waits += restarting
                if lost == MAX_ATTEMPTS or waits > MAX_RESTART_WAITS:
                    raise TradebenchError(
                        f"episode {ref.id} lost its worker {lost + waits} times "
                        f"({type(exc).__name__}); check the cluster's nodes, then rerun the "
                        "same command to continue"
                    ) from None
                if restarting:
                    await asyncio.sleep(RESTART_POLL_S)
                job = self._job(ref, folder)  # from the last step the driver holds
                steps = _steps(job.checkpoint)
                self.progress.retried(Retry(ref.id, steps, type(exc).__name__))
                log.warning("episode %s: worker lost, resubmitted from step %d", ref.id, steps)
                self.progress.move(1, "retrying", "running")
                continue
            write_files(folder, result.files)
            write_episode_record(folder, result.record)
            self.progress.dataset_copies += int(result.dataset_copied)
            if result.resumed_steps:
                self.progress.resumed[ref.id] = result.resumed_steps
            self.progress.finish("running", tokens=int(result.record.tokens or 0))
            return

    async def _stream(self, job: EpisodeJob, folder: Path) -> EpisodeResult:
        ray = require_ray()
        stream, index = self._submit(job)
        try:
            async for item_ref in stream:
                try:
                    item = await item_ref
                except ray.exceptions.RayTaskError as exc:
                    if isinstance(exc.cause, Exception) and not isinstance(exc.cause, self.lost):
                        raise exc.cause from None
                    raise
                if isinstance(item, EpisodeResult):
                    return item
                append_delta(folder, item)
                self.progress.bump(steps=item.steps)
            raise TradebenchError(f"episode {job.ref.id}: the worker ended without a result")
        except asyncio.CancelledError:
            ray.cancel(stream)
            raise
        finally:
            if index is not None and self.workers is not None:
                self.workers.load[index] -= 1


def _steps(checkpoint: dict[str, bytes]) -> int:
    return checkpoint.get(PROGRESS_FILE, b"").count(b"\n")


def _saved_budget(path: Path) -> BudgetState | None:
    if not path.exists():
        return None
    return read_model(
        path,
        BudgetState,
        "record of spend",
        "it holds the tokens and cost spent so far: restore it, or delete it to count the "
        "spend from zero (cached replies stay free)",
    )


def _save_budget(path: Path, state: BudgetState) -> None:
    write_text_atomic(path, state.model_dump_json(indent=2) + "\n")


async def run_on_ray(
    run: RayRun, todo: list[EpisodeRef], progress: RunProgress, address: str | None = None
) -> None:
    """Run `todo` on the cluster at `address` into `run.run_dir` (the driver writes it).

    Raises:
        BudgetStop: A cap was reached; the spend is saved and a rerun continues.
        TradebenchError: The first failure of any episode (not an exception group).
    """
    if not todo:
        return
    connect(address)
    spec, run_dir = run.spec, run.run_dir
    shipment = ship_dataset(run.dataset)
    models = any(ref.kind == "llm" for ref in todo)
    cache_path = Path(spec.cache.path) if spec.cache.path else run_dir / CACHE_FILE
    services = workers = None
    try:
        if models:
            budget_file = run_dir / BUDGET_FILE
            services = Services.start(
                spec.budget, _saved_budget(budget_file), cache_path, spec.cache.mode
            )
            services.price_models([a.model_config_() for a in spec.llm_agents()])
            workers = WorkerPool.start(spec, services, uuid.uuid4().hex[:8])
        driver = Driver(run, shipment, progress, workers)
        async with asyncio.TaskGroup() as group:
            for ref in todo:
                group.create_task(driver.episode(ref))
    except BaseExceptionGroup as failed:  # one clean error for the CLI, not a group
        budget = failed.subgroup(lambda e: isinstance(e, BudgetExceeded))
        if budget is not None:
            raise BudgetStop(f"{first_error(budget)} Stopped cleanly: {RESUME_HINT}.") from None
        raise first_error(failed) from None
    finally:
        if workers is not None:
            workers.stop()
        if services is not None:
            _save_budget(run_dir / BUDGET_FILE, services.snapshot())
            progress.freed_reservations = services.release_all()
            services.stop()
