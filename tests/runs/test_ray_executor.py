"""The Ray executor on a real local Ray cluster: the same spec gives the same run folder as
the local executor (even when its workers are killed at several steps of an episode), one
budget holds across workers, one cache replays exactly, the dataset reaches a node once.
The workers run the checkout under test (`src` first on their path, checked inside one)."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import REPO_ROOT
from tests.report.model_run import replay_spec, scripted, spec_dict
from tests.runs.ray_budget_worker import MAX_TOKENS, spend_until_refused
from tests.runs.traces import without_latency
from tradebench.benchmarks import get_benchmark, run_spec
from tradebench.cli import app
from tradebench.llm.base import get_model
from tradebench.llm.budget import BudgetConfig
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.llm.types import Message, ModelConfig
from tradebench.runs.executor import plan
from tradebench.runs.progress import RunProgress
from tradebench.runs.ray.cluster import ship_dataset
from tradebench.runs.ray.services import Services
from tradebench.runs.ray.worker import EpisodeJob, ModelWorker, StepDelta
from tradebench.runs.records import TRACE_FILE, TRACE_ZST_FILE
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_bytes

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")

BLINDED = "scripted_memory_only_blinded_s0_20220301-20220308"
SAME_BYTES = ("steps.parquet", "positions.parquet", "orders.parquet", "metrics.json")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The nodes' scratch folder (datasets, attempts) for this module's cluster."""
    return tmp_path_factory.mktemp("ray_scratch")


@pytest.fixture(scope="module")
def cluster(scratch: Path) -> Iterator[None]:
    """One local two-CPU Ray cluster for the module (start-up is slow)."""
    path = os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)])  # src: the code under test
    env = {"PYTHONPATH": path, "TRADEBENCH_RAY_SCRATCH": str(scratch)}
    ray.init(
        address="local",  # its own cluster, whatever `ray start` left on this machine
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        runtime_env={"env_vars": env},
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    """One loopback server for the module (its url is part of each episode's record)."""
    with LoopbackServer(responder=scripted) as started:
        yield started


@pytest.fixture(scope="module")
def local_run(
    server: LoopbackServer, synth_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The reference: the scripted-model spec run by the local executor."""
    out = tmp_path_factory.mktemp("local") / "run"
    server.responder = scripted
    asyncio.run(
        run_spec(RunSpec.model_validate(spec_dict(synth_dataset_dir, server.openai_url)), out)
    )
    return out


def _trace_without_latency(folder: Path) -> list[Any]:
    """The trace's steps with the measured call latencies (wall clock) left out."""

    raw = trace_bytes(folder) or b""
    return [without_latency(json.loads(line)) for line in raw.splitlines()]


def _record(folder: Path) -> dict[str, Any]:
    """`episode.json` with the model's endpoint left out (a replay moves it)."""
    record = json.loads((folder / "episode.json").read_text(encoding="utf-8"))
    (record.get("model") or {}).pop("base_url", None)
    return record


def assert_same_run(a: Path, b: Path, same_endpoint: bool = True) -> None:
    """Byte-identical summary and step files, the same traces (latencies aside); the
    records byte-identical too unless the endpoint moved."""
    assert (a / "summary.parquet").read_bytes() == (b / "summary.parquet").read_bytes()
    episodes = sorted(p.name for p in (a / "episodes").iterdir())
    assert episodes == sorted(p.name for p in (b / "episodes").iterdir())
    for name in episodes:
        ea, eb = a / "episodes" / name, b / "episodes" / name
        assert sorted(p.name for p in ea.iterdir()) == sorted(p.name for p in eb.iterdir())
        assert _record(ea) == _record(eb)
        for file in (*SAME_BYTES, "progress.jsonl", *(("episode.json",) * same_endpoint)):
            assert (ea / file).exists() == (eb / file).exists(), file
            if (ea / file).exists():
                assert (ea / file).read_bytes() == (eb / file).read_bytes(), f"{name}/{file}"
        assert _trace_without_latency(ea) == _trace_without_latency(eb)


class KillAt:
    """`scripted`, except that at the blinded episode's first request of each step in
    `steps`, once the driver's journal holds the steps before it, every model worker of the
    run is killed (SIGKILL). Killing with more than one step held is what catches a worker
    that streams its whole journal each step instead of what the step added."""

    def __init__(self, run_dir: Path, steps: tuple[int, ...]) -> None:
        self.progress = run_dir / "episodes" / BLINDED / "progress.jsonl"
        self.pending = list(steps)
        self.fired: list[int] = []
        self.held: list[int] = []
        """Lines of the driver's journal at each kill."""

    def __call__(self, req: RecordedRequest) -> Reply:
        text = json.dumps(req.body)
        due = [k for k in self.pending if f"Step {k} of" in text]
        if due and "Identifiers: asset_" in text:
            step = due[0]
            self.pending.remove(step)
            for _ in range(600):  # the previous step's line is on its way to the driver
                if self._lines() >= step - 1:
                    break
                time.sleep(0.05)
            self.held.append(self._lines())
            self.fired.append(step)
            for name in ray.util.list_named_actors():
                if name.startswith("tradebench-model-"):
                    os.kill(ray.get(ray.get_actor(name).pid.remote()), signal.SIGKILL)
        return scripted(req)

    def _lines(self) -> int:
        return self.progress.read_bytes().count(b"\n") if self.progress.exists() else 0


@ray.remote
def _tradebench_file() -> str:
    import tradebench

    return tradebench.__file__


def test_workers_run_the_checkout_under_test(cluster: None) -> None:
    """A worker imports `tradebench` from this checkout's `src`, not an installed copy."""
    loaded = Path(ray.get(_tradebench_file.options(num_cpus=0).remote()))
    assert loaded.is_relative_to(REPO_ROOT / "src"), loaded


def test_ray_run_with_a_killed_worker_equals_the_local_run(
    cluster: None,
    server: LoopbackServer,
    local_run: Path,
    synth_dataset_dir: Path,
    scratch: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    killer = KillAt(out, steps=(2, 3))
    progress = RunProgress()
    server.responder = killer
    try:
        spec = {**spec_dict(synth_dataset_dir, server.openai_url), "executor": "ray"}
        asyncio.run(run_spec(RunSpec.model_validate(spec), out, progress))
    finally:
        server.responder = scripted
    assert killer.fired == [2, 3] and killer.held == [1, 2]
    assert_same_run(local_run, out)
    # each time the killed episode went back to a worker from the last step the driver held
    # (resubmitted, maybe several times while Ray restarts the worker)
    resent = [r.from_step for r in progress.retries if r.episode_id == BLINDED]
    assert resent == sorted(resent) and set(resent) == {1, 2}
    assert progress.resumed[BLINDED] == 2
    # the call in flight at the kill was reserved by a dead process: the budget freed it
    assert sum(calls for _, calls, _ in progress.freed_reservations) >= 1
    assert progress.states["done"] == progress.episodes_total == 4
    assert sum(progress.states.values()) == 4  # nothing left queued, running or retrying
    assert (out / "episodes" / BLINDED / TRACE_ZST_FILE).exists()
    assert not (out / "episodes" / BLINDED / "trace.jsonl").exists()
    # the dataset reached this one node once, however many workers ran episodes
    assert progress.dataset_copies <= 1
    assert len([p for p in (scratch / "datasets").iterdir() if p.is_dir()]) == 1
    # every step the driver held when a worker died had its replies stored at the keeper
    # before it was sent (`ModelWorker.episode`), so the killed run's own cache replays it
    replayed = tmp_path / "replay"
    replay = replay_spec(spec_dict(synth_dataset_dir, ""), out / "cache.sqlite")
    asyncio.run(run_spec(RunSpec.model_validate(replay), replayed))
    assert_same_run(out, replayed, same_endpoint=False)


def test_a_step_reaches_the_driver_only_after_its_replies_are_stored(
    cluster: None,
    server: LoopbackServer,
    synth_dataset_dir: Path,
    scratch: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model worker with no stream window sends each step as soon as it completes. Even
    then the cache file holds every reply behind the steps the driver has received: a kill
    right after a step reaches the driver leaves nothing a replay of the run would miss.
    (The keepers store in batches every `FLUSH_WINDOW_S`, so without the worker's wait the
    first steps arrive before their replies are stored.)"""
    monkeypatch.setenv("TRADEBENCH_RAY_SCRATCH", str(scratch))
    server.responder = scripted
    spec = RunSpec.model_validate(
        {**spec_dict(synth_dataset_dir, server.openai_url), "executor": "ray"}
    )
    benchmark = get_benchmark(spec.benchmark)
    resolved = plan(benchmark, spec, tmp_path / "run")
    ref = next(r for r in resolved.todo if r.kind == "llm")
    cache = tmp_path / "cache.sqlite"
    services = Services.start(resolved.spec.budget, None, cache, "readwrite")
    job = EpisodeJob(
        benchmark, resolved.spec, resolved.options, ref, ship_dataset(resolved.dataset), {}
    )
    seen: list[tuple[int, int]] = []  # (model calls of the steps received, replies stored)

    async def drive() -> None:
        worker = ModelWorker(resolved.spec, services, window_s=0.0)
        calls = 0
        async for item in worker.episode(job):
            if isinstance(item, StepDelta):
                lines = item.appended.get(TRACE_FILE, b"").splitlines()
                calls += sum(len(json.loads(line)["model_calls"]) for line in lines)
                with sqlite3.connect(cache) as db:
                    (stored,) = db.execute("SELECT COUNT(*) FROM replies").fetchone()
                seen.append((calls, stored))
        await worker.close()

    try:
        asyncio.run(drive())
    finally:
        services.stop()
    assert len(seen) > 1 and seen[-1][0] > 0
    assert all(stored >= calls for calls, stored in seen), seen


def test_cli_replays_a_local_cache_on_ray_exactly(
    cluster: None, local_run: Path, synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """The run's one cache (read through its keeper actor) answers every request of the
    Ray run, with no endpoint at all."""
    spec = spec_dict(synth_dataset_dir, "http://127.0.0.1:9/v1")
    spec["cache"] = {"mode": "replay", "path": str(local_run / "cache.sqlite")}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["run", str(path), "-o", str(tmp_path / "run"), "--executor", "ray"]
    )
    assert result.exit_code == 0, result.output
    assert_same_run(local_run, tmp_path / "run", same_endpoint=False)
    assert yaml.safe_load((tmp_path / "run" / "spec.yaml").read_text())["executor"] == "ray"


def test_four_workers_share_one_budget(cluster: None, tmp_path: Path) -> None:
    with LoopbackServer(responder=lambda req: Reply.say("pong")) as server:
        probe = get_model(
            ModelConfig(
                provider="openai", model="m", base_url=server.openai_url, max_tokens=MAX_TOKENS
            )
        )
        reply = asyncio.run(
            probe.generate([Message(role="user", content="ping")], sample_index=1000)
        )
        used = reply.usage.input_tokens + reply.usage.output_tokens
        worst = len("ping") // 4 + MAX_TOKENS  # reserved: prompt chars / 4 plus max_tokens
        assert worst >= used  # so a reservation covers the real use and the cap is exact
        cap = 99 * used + worst  # one call after another, exactly 100 fit
        start = server.count()
        services = Services.start(BudgetConfig(max_tokens=cap), None, tmp_path / "c.sqlite", "off")
        try:
            worker = ray.remote(spend_until_refused).options(num_cpus=0)
            counts = ray.get(
                [worker.remote(services, server.openai_url, 1000 * (i + 2)) for i in range(4)]
            )
            spent = services.snapshot()
        finally:
            services.stop()
        sent = server.count() - start
    assert sent == sum(counts) == spent.calls
    assert sent <= 100
    # a worker is refused early only by the other three's reservations in flight
    assert sent >= math.ceil((cap - 4 * worst) / used)
    assert spent.input_tokens + spent.output_tokens <= cap


def test_a_ray_runs_cache_and_spend_are_complete_and_replay_locally(
    cluster: None,
    server: LoopbackServer,
    local_run: Path,
    synth_dataset_dir: Path,
    tmp_path: Path,
) -> None:
    """Workers lease the budget and batch their stores, yet when the run ends every call
    is charged (the same spend as the local run), every lease is given back, and the
    cache they wrote replays the run locally, exactly and with nothing sent."""
    server.responder = scripted
    before = server.count()
    out = tmp_path / "ray"
    progress = RunProgress()
    spec = {**spec_dict(synth_dataset_dir, server.openai_url), "executor": "ray"}
    asyncio.run(run_spec(RunSpec.model_validate(spec), out, progress))
    sent = server.count() - before
    assert_same_run(local_run, out)
    spent = json.loads((out / "budget.json").read_text(encoding="utf-8"))
    local = json.loads((local_run / "budget.json").read_text(encoding="utf-8"))
    assert spent["calls"] == sent == local["calls"]
    for field in ("input_tokens", "output_tokens"):
        assert spent[field] == local[field], field
    assert progress.freed_reservations == []  # no worker died: each gave its lease back
    # steps travel to the driver several to a message: every one is counted once
    journals = (local_run / "episodes").glob("*/progress.jsonl")
    assert progress.steps_done == sum(p.read_bytes().count(b"\n") for p in journals) > 0
    replayed = tmp_path / "replay"
    asyncio.run(
        run_spec(
            RunSpec.model_validate(
                replay_spec(spec_dict(synth_dataset_dir, ""), out / "cache.sqlite")
            ),
            replayed,
        )
    )
    assert_same_run(out, replayed, same_endpoint=False)
    assert server.count() == before + sent
