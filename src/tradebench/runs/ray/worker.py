"""What runs on a Ray worker: one attempt at one episode, streamed back to the driver.

An attempt starts in a fresh scratch folder on the worker's node, seeded with the episode's
checkpoint (its journal as the driver holds it), and runs the benchmark's own
`run_episode` there, unchanged. After every completed step it sends the bytes the journal
gained (`StepDelta`), so the driver's copy of the journal is the episode's last
checkpoint; at the end it sends every file of the episode folder and the record
(`EpisodeResult`) and removes the scratch folder. The worker never writes the run folder.

Model-free episodes run as Ray tasks (`cpu_episode`, one CPU each); model episodes run in
`ModelWorker` async actors, many at once per actor, their models leasing the run's
`BudgetKeeper` and caching through the run's `CacheKeeper` (`ray.services`).
"""

from __future__ import annotations

import asyncio
import os
import queue
import shutil
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tradebench.errors import ConfigError
from tradebench.llm.base import ChatModel, get_model
from tradebench.runs.dataset_cache import cached_dataset
from tradebench.runs.protocol import Benchmark, EpisodeContext, EpisodeRef
from tradebench.runs.ray.cluster import DatasetShipment, materialise, node_copy, scratch_root
from tradebench.runs.ray.services import Holder, Services
from tradebench.runs.records import PROGRESS_FILE, TRACE_FILE, EpisodeRecord, episode_folder
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import compact_trace

JOURNAL_FILES = (TRACE_FILE, PROGRESS_FILE)
"""The files that make an episode's checkpoint, in the order the journal writes them."""


@dataclass(frozen=True)
class EpisodeJob:
    """Everything a worker needs for one attempt at one episode."""

    benchmark: Benchmark
    spec: RunSpec
    options: Any
    ref: EpisodeRef
    dataset: DatasetShipment
    checkpoint: dict[str, bytes]
    """The episode's journal files as the driver holds them (empty: start afresh)."""


STREAM_WINDOW_S = 1.0
"""A model worker sends an episode's step to the driver at most this long after the step
(plus the keepers' flush); the episode's steps completed meanwhile travel with it."""


@dataclass(frozen=True)
class StepDelta:
    """Bytes appended to the journal files by `steps` completed steps."""

    appended: dict[str, bytes]
    steps: int = 1


def merged(deltas: list[StepDelta]) -> StepDelta:
    """Consecutive deltas as one: each file's bytes in order, their steps added."""
    if len(deltas) == 1:
        return deltas[0]
    out: dict[str, bytes] = {}
    for name in JOURNAL_FILES:
        parts = [d.appended[name] for d in deltas if d.appended.get(name)]
        if parts:
            out[name] = b"".join(parts)
    return StepDelta(appended=out, steps=sum(d.steps for d in deltas))


@dataclass(frozen=True)
class EpisodeResult:
    """A finished episode: its record, every file of its folder, and how it started."""

    record: EpisodeRecord
    files: dict[str, bytes]
    """Relative path under the episode folder -> contents."""
    resumed_steps: int
    """Journal lines the attempt started from."""
    dataset_copied: bool
    """Whether this attempt wrote the dataset to its node's disk."""


class JournalTail:
    """Reads what the journal files gained since the last read."""

    def __init__(self, folder: Path) -> None:
        """Start at the files' current ends."""
        self.folder = folder
        self.offsets = {name: self._size(name) for name in JOURNAL_FILES}

    def _size(self, name: str) -> int:
        path = self.folder / name
        return path.stat().st_size if path.exists() else 0

    def delta(self) -> StepDelta:
        """The bytes appended since the last call (a file rewritten shorter restarts)."""
        out: dict[str, bytes] = {}
        for name in JOURNAL_FILES:
            size, start = self._size(name), self.offsets[name]
            if size == start:
                continue
            with open(self.folder / name, "rb") as fh:
                fh.seek(start if size > start else 0)
                out[name] = fh.read()
            self.offsets[name] = size
        return StepDelta(appended=out)


def _folder_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _outside_writes(attempt: Path, folder: Path) -> list[str]:
    return [
        p.relative_to(attempt).as_posix()
        for p in attempt.rglob("*")
        if p.is_file() and folder not in p.parents
    ]


async def run_attempt(
    job: EpisodeJob, model: ChatModel | None, emit: Callable[[StepDelta], None]
) -> EpisodeResult:
    """Run one attempt at `job` in a scratch folder, calling `emit` after every step.

    Raises:
        ConfigError: The benchmark wrote outside its episode folder (it needs the shared
            run folder; run it with `executor: local`).
    """
    dataset_dir, copied = node_copy(job.dataset), False
    if dataset_dir is None:  # the first attempt on this node fetches and writes it
        files = await job.dataset.files
        dataset_dir, copied = await asyncio.to_thread(materialise, job.dataset, files)
    attempt = scratch_root() / "attempts" / uuid.uuid4().hex
    folder = episode_folder(attempt, job.ref.id)
    folder.mkdir(parents=True)
    try:
        for name, data in job.checkpoint.items():
            (folder / name).write_bytes(data)
        resumed = job.checkpoint.get(PROGRESS_FILE, b"").count(b"\n")  # complete lines
        tail = JournalTail(folder)
        ctx = EpisodeContext(
            spec=job.spec,
            options=job.options,
            dataset=cached_dataset(str(dataset_dir)),
            run_dir=attempt,
            folder=folder,
            agent=next((a for a in job.spec.agents if a.name == job.ref.agent), None),
            model=model,
            on_step=lambda: emit(tail.delta()),
        )
        record = await job.benchmark.run_episode(job.ref, ctx)
        if record.status == "done":  # as the local executor does
            compact_trace(folder)
        outside = _outside_writes(attempt, folder)
        if outside:
            raise ConfigError(
                f"benchmark {job.benchmark.name!r} wrote {outside[0]} outside its episode "
                "folder, which the Ray executor cannot bring back; run it with `executor: local`"
            )
        return EpisodeResult(record, _folder_files(folder), resumed, copied)
    finally:
        shutil.rmtree(attempt, ignore_errors=True)


@dataclass(frozen=True)
class _Failed:
    error: BaseException


def cpu_episode(job: EpisodeJob) -> Iterator[StepDelta | EpisodeResult]:
    """Ray task body (a streaming generator): a model-free episode's steps, then its result.

    The episode's coroutine runs on its own loop in a thread, so its steps can be yielded
    to the driver while it runs.
    """
    items: queue.SimpleQueue[StepDelta | EpisodeResult | _Failed] = queue.SimpleQueue()

    def work() -> None:
        try:
            items.put(asyncio.run(run_attempt(job, None, items.put)))
        except BaseException as exc:  # handed to the generator, raised to the driver
            items.put(_Failed(exc))

    threading.Thread(target=work, name=f"episode-{job.ref.id}", daemon=True).start()
    while True:
        item = items.get()
        if isinstance(item, _Failed):
            raise item.error
        yield item
        if isinstance(item, EpisodeResult):
            return


class ModelWorker:
    """Async actor body: runs many model episodes at once through the run's keepers."""

    def __init__(
        self,
        spec: RunSpec,
        services: Services,
        slot: int = 0,
        window_s: float = STREAM_WINDOW_S,
    ) -> None:
        """Build one model per model agent of `spec`, leasing the budget and caching through
        the keepers; its leases are held as (`slot`, an id of this process). A step goes
        to the driver at most `window_s` after it completes (`episode`)."""
        self.window_s = window_s
        holder = Holder(slot, uuid.uuid4().hex)
        self.budget, self.cache = services.remote_budget(holder), services.remote_cache()
        self.models: dict[str, ChatModel] = {
            a.name: get_model(
                a.model_config_(),
                cache=self.cache,  # type: ignore[arg-type]  (the awaited ResponseCache interface)
                budget=self.budget,  # type: ignore[arg-type]  (the awaited Budget interface)
                retry=a.retry_policy(),
            )
            for a in spec.llm_agents()
        }

    async def pid(self) -> int:
        """This worker's process id (for operators and the worker-loss test)."""
        return os.getpid()

    async def settled(self) -> None:
        """Return once every call made so far is charged and its reply stored at the
        keepers (before a step goes to the driver)."""
        await self.budget.reported()
        if self.cache is not None:
            await self.cache.stored()

    async def close(self) -> None:
        """Settle everything and give the unspent budget lease back (the run is ending)."""
        await self.settled()
        await self.budget.close()

    async def episode(self, job: EpisodeJob) -> AsyncIterator[StepDelta | EpisodeResult]:
        """A streaming generator: a model episode's steps, then its result. A step goes out
        `window_s` after it completes (or when the episode ends), with the steps completed
        meanwhile, once the calls behind them are settled at the keepers: one message to
        the driver for several steps when steps are quick. The driver holds no step whose
        replies the cache lacks, so a run killed at any point replays from its cache."""
        steps: asyncio.Queue[StepDelta] = asyncio.Queue()
        task = asyncio.create_task(run_attempt(job, self.models[job.ref.agent], steps.put_nowait))

        def waiting(first: list[StepDelta]) -> StepDelta:
            while not steps.empty():
                first.append(steps.get_nowait())
            return merged(first)

        try:
            while not task.done():
                getter = asyncio.create_task(steps.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    await asyncio.wait({task}, timeout=self.window_s)
                    delta = waiting([getter.result()])
                    await self.settled()
                    yield delta
                else:
                    getter.cancel()
            await self.settled()
            if not steps.empty():
                yield waiting([])
            yield task.result()
        finally:
            task.cancel()
