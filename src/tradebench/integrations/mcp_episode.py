"""The episode a client plays over MCP: which one, its context, and its run into the folder.

The spec is planned like `tradebench run` plans it (same resolved `spec.yaml`, same folder
check, same episode ids), then one model episode of the grid is run by the benchmark itself
(`run_episode`: the broker's day loop, the journal, the files) with `ClientDrivenModel` in
the model's seat. The grid's unfinished model-free episodes (the index reference, rule
baselines) run beside it, so the summary and the report compare the episode as they would
a native one. The run folder's lock is held throughout: no second run writes into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tradebench.benchmarks import get_benchmark
from tradebench.benchmarks.portfolio.benchmark import NAME as PORTFOLIO
from tradebench.benchmarks.portfolio.benchmark import episode_window, step_cap
from tradebench.errors import ConfigError
from tradebench.integrations.mcp_bridge import ClientDrivenModel
from tradebench.runs.broker.engine import trading_days
from tradebench.runs.dataset_cache import cached_dataset
from tradebench.runs.executor import Plan, plan, run_local
from tradebench.runs.guard import run_lock
from tradebench.runs.journal import Journal
from tradebench.runs.progress import RunProgress
from tradebench.runs.protocol import Benchmark, EpisodeContext, EpisodeRef
from tradebench.runs.records import METRICS_FILE, EpisodeRecord, episode_folder
from tradebench.runs.spec import RunSpec
from tradebench.runs.store import read_json, write_episode_record
from tradebench.runs.summary import write_summary
from tradebench.runs.trace import compact_trace

log = logging.getLogger("tradebench.runs")
SERVED = "mcp"
"""The value of `served` in the episode record of an episode an MCP client played."""
JournalListener = Callable[[int, dict[str, Any] | None], None]


class ReportingJournal(Journal):
    """The episode's journal, telling a listener each day it persisted (index, trace)."""

    def __init__(self, folder: Path, listener: JournalListener) -> None:
        """Use `folder`; call `listener(index, trace)` after each persisted day."""
        super().__init__(folder)
        self.listener = listener

    def append(self, index: int, line: dict[str, Any], trace: dict[str, Any] | None) -> None:
        """Persist the day (`Journal.append`), then tell the listener."""
        super().append(index, line, trace)
        self.listener(index, trace)


@dataclass
class ServedContext(EpisodeContext):
    """An `EpisodeContext` whose journal reports each persisted day."""

    on_journaled: JournalListener = field(default=lambda index, trace: None)

    def journal(self) -> Journal:
        """The episode folder's journal, reporting to `on_journaled`."""
        return ReportingJournal(self.folder, self.on_journaled)


def choose_episode(resolved: Plan, episode_id: str | None) -> EpisodeRef:
    """The episode to serve: `episode_id`, else the grid's first unfinished model episode.

    Raises:
        ConfigError: No such model episode, or it is already finished.
    """
    models = [ep for ep in resolved.episodes if ep.kind == "llm"]
    todo = {ep.id for ep in resolved.todo}
    if episode_id is None:
        left = [ep for ep in models if ep.id in todo]
        if not left:
            raise ConfigError(
                "every model episode of this spec is finished in the run folder; name another "
                "--out folder to play the spec again"
            )
        return left[0]
    chosen = next((ep for ep in models if ep.id == episode_id), None)
    if chosen is None:
        known = ", ".join(ep.id for ep in models) or "none"
        raise ConfigError(
            f"the spec has no model episode {episode_id!r}; its model episodes: {known}"
        )
    if chosen.id not in todo:
        raise ConfigError(f"episode {episode_id!r} is finished in the run folder")
    return chosen


def _context(
    resolved: Plan, run_dir: Path, ref: EpisodeRef, model: ClientDrivenModel
) -> ServedContext:
    folder = episode_folder(run_dir, ref.id)
    folder.mkdir(parents=True, exist_ok=True)
    return ServedContext(
        spec=resolved.spec,
        options=resolved.options,
        dataset=cached_dataset(str(resolved.dataset)),
        run_dir=run_dir,
        folder=folder,
        agent=resolved.spec.agent(ref.agent),
        model=model,
        on_journaled=model.day_closed,
    )


def decision_days(resolved: Plan, ref: EpisodeRef) -> int:
    """How many decision days the episode runs (its window, cut by the step caps)."""
    data = cached_dataset(str(resolved.dataset))
    agent = resolved.spec.agent(ref.agent)
    cap = step_cap(resolved.options.max_steps, agent.max_steps)
    start, end = episode_window(data, ref.window, cap)
    return len(trading_days(data.panel, start, end))


def closing_text(folder: Path, days: int) -> str:
    """What the client reads when the episode is over: its length and returns (no date,
    no identifier)."""
    metrics = read_json(folder / METRICS_FILE)
    mine = metrics.get("total_return")
    index = (metrics.get("benchmark") or {}).get("total_return")
    parts = [f"The episode is over after {days} decision days."]
    if mine is not None:
        parts.append(f"Your total return: {mine:+.2%}.")
    if index is not None:
        parts.append(f"The benchmark index over the same days: {index:+.2%}.")
    return " ".join(parts)


async def run_served(benchmark: Benchmark, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
    """Run (or resume) the episode through the benchmark and write its record, marked as
    served over MCP (`running` first; a done episode's trace compacted, as the executor
    does)."""
    write_episode_record(ctx.folder, ref.record(benchmark.name, "running", served=SERVED))
    record = await benchmark.run_episode(ref, ctx)
    record = EpisodeRecord.model_validate({**record.model_dump(mode="json"), "served": SERVED})
    if record.status == "done":
        compact_trace(ctx.folder)
    write_episode_record(ctx.folder, record)
    return record


Transport = Callable[[ClientDrivenModel, EpisodeRef], Awaitable[None]]
"""Serves the model seat to clients until they leave (stdio) or the server is stopped."""


@dataclass(frozen=True)
class ServeRequest:
    """What `serve_episode` is asked: the spec, the run folder, the episode (None: the
    first unfinished model episode)."""

    spec: RunSpec
    run_dir: Path
    episode_id: str | None = None


@dataclass(frozen=True)
class Served:
    """The episode served, and whether it was played to its end."""

    ref: EpisodeRef
    finished: bool


async def serve_episode(
    request: ServeRequest, transport: Transport, on_start: Callable[[EpisodeRef, int], None]
) -> Served:
    """Plan the spec, pick the episode and serve it through `transport` while the day loop
    runs; `on_start(ref, days_done)` is called once the episode is chosen. The summary is
    written when the episode ends; a client that leaves earlier leaves the days it finished
    in the journal, and serving again continues.

    Raises:
        ConfigError: Not a portfolio spec, bad spec, folder or episode (before serving).
    """
    run_dir = Path(request.run_dir)
    with run_lock(run_dir):
        benchmark = get_benchmark(request.spec.benchmark)
        if benchmark.name != PORTFOLIO:
            raise ConfigError(
                f"`serve mcp` serves portfolio episodes; this spec's benchmark is "
                f"{benchmark.name!r}"
            )
        resolved = plan(benchmark, request.spec, run_dir)
        ref = choose_episode(resolved, request.episode_id)
        total = decision_days(resolved, ref)
        done = len(Journal(episode_folder(run_dir, ref.id)).restore())
        entry = resolved.spec.agent(ref.agent)
        model = ClientDrivenModel(entry.model_config_(), step=done + 1, total=total)
        ctx = _context(resolved, run_dir, ref, model)
        on_start(ref, done)
        others = [ep for ep in resolved.todo if ep.kind != "llm"]
        await _serve(benchmark, resolved, run_dir, ref, ctx, others, transport, total)
    return Served(ref, model.finished)


async def _serve(
    benchmark: Benchmark,
    resolved: Plan,
    run_dir: Path,
    ref: EpisodeRef,
    ctx: ServedContext,
    others: list[EpisodeRef],
    transport: Transport,
    total: int,
) -> None:
    model = ctx.model
    assert isinstance(model, ClientDrivenModel)

    async def play() -> None:
        progress = RunProgress()
        progress.move(len(others), None, "queued")
        beside = asyncio.create_task(run_local(benchmark, resolved, run_dir, others, progress))
        try:
            await run_served(benchmark, ref, ctx)
            await beside
            write_summary(run_dir, benchmark.summary_row)
        except Exception:
            model.finish("The episode stopped on an error on the server.", stopped=True)
            raise
        finally:
            if not beside.done():
                beside.cancel()
        model.finish(closing_text(ctx.folder, total))

    engine = asyncio.create_task(play())
    server = asyncio.create_task(transport(model, ref))
    await asyncio.wait({engine, server}, return_when=asyncio.FIRST_COMPLETED)
    if server.done():  # the client left (or the server stopped): the journal keeps the days
        engine.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await engine
        server.result()
        return
    if engine.exception() is not None:
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server
        engine.result()
    log.info("episode %s finished; serving its result until the server stops", ref.id)
    await server
