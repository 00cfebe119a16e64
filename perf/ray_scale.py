"""Throughput of the Ray executor against the local one, and a projection for a full grid.

A portfolio grid on the synthetic market against the loopback server (a subprocess) with
injected latency (default 200 ms a call), at 8, 32 and 128 concurrent model episodes (one
wave: as many episodes as the concurrency, `--steps` decision days each). Both executors
run the same specs in the same process, one after the other, each into a fresh folder
(every call a cache miss). For each: wall time, calls/s (calls from the run's
`budget.json`), and efficiency = ideal wall / measured wall, where the ideal is the
longest episode's calls times the latency (every episode in parallel, zero overhead).
Wall and efficiency include each run's start-up (the Ray executor starts its actors and
ships the dataset); `1st step s` is the time to the first completed step and `eff. after`
the efficiency from then on (the steps after each episode's first against their ideal),
the figure that carries over to a long grid. Then the projected wall time of a full
KTD-Fin grid at a provider rate limit, from the measured calls per step.

Last the machine's ceiling (after the levels, so one-time imports are paid): the same
grid at the largest level against a second loopback server with no latency, on each
executor. Its calls/s is what the harness, the server and the executor sustain on these
CPUs with nothing to wait for, so no latency can be hidden beyond it: efficiency at a
level is at most ceiling / (episodes / latency), printed as a bound, with the CPU per call
of the server and of this process, and for Ray of each of its processes (model workers,
budget and cache keepers, Ray's own daemons; read from Linux `/proc` while the grid runs,
since the actors exit with the run; only the processes below this one, so another Ray
cluster on the machine is not counted), for the whole run and after start-up (from the
first completed step, the episodes' first calls apart). Its last two lines set Ray's CPU
per call (every process of the run but the server: driver, model workers, keepers, Ray's
daemons) beside its anchor, the local executor's (the harness process) in the same
invocation, as a ratio. Where the bound is below a target, only more CPUs (a cluster's
nodes) or less work per call reach it.

    python perf/ray_scale.py [--levels 8 32 128] [--latency-ms 200] [--steps 3]
        [--rpm 500] [--models 10] [--seeds 3] [--days 548]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ray

from tradebench.benchmarks import run_spec
from tradebench.data.synth import SynthConfig, synthesize
from tradebench.runs.progress import RunProgress
from tradebench.runs.ray.cluster import connect
from tradebench.runs.ray.services import Services
from tradebench.runs.ray.worker import ModelWorker
from tradebench.runs.records import BUDGET_FILE
from tradebench.runs.spec import RunSpec

MODES, MASKS = 3, 4
"""KTD-Fin's information modes and mask levels (the projected grid)."""


SERVERS: dict[str, int] = {}
"""base_url -> pid of its loopback server process (to read the server's CPU time)."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux `/proc`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> set[int]:
    """Pids of every process below `root` (Linux `/proc`): this run's Ray cluster, not
    another one on the same machine."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def ray_processes() -> dict[int, tuple[str, float]]:
    """pid -> (role, CPU seconds so far) of this run's Ray processes (below this one):
    actors and workers by their process title (`ray::ModelWorker`, ...), the daemons by
    name."""
    out: dict[int, tuple[str, float]] = {}
    for pid in descendants(os.getpid()):
        entry = Path(f"/proc/{pid}")
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            name = (entry / "comm").read_text().strip()
            cpu = cpu_seconds(pid)
        except (OSError, ValueError):
            continue  # exited meanwhile
        if title.startswith("ray::"):  # ray::ModelWorker.episode -> ray::ModelWorker
            out[pid] = (title.split()[0].split(".")[0], cpu)
        elif name in ("raylet", "gcs_server"):
            out[pid] = (name, cpu)
    return out


class CpuMeter:
    """CPU seconds spent inside a `with` block by this process and, with `ray`, by each
    role of this run's Ray processes (summed over processes; sampled every 0.2 s, so a
    process that exits inside the block counts up to its last sample); `mark()` (at the
    first completed step) splits off the start-up."""

    def __init__(self, ray: bool) -> None:
        """Count this process, and this run's Ray processes when `ray`."""
        self.ray = ray
        self.first: dict[int, tuple[str, float]] = {}
        self.marked: dict[int, tuple[str, float]] | None = None
        self.last: dict[int, tuple[str, float]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def snapshot(self) -> dict[int, tuple[str, float]]:
        """pid -> (role, CPU seconds so far) of every process counted."""
        out = ray_processes() if self.ray else {}
        out[os.getpid()] = ("this process", cpu_seconds(os.getpid()))
        return out

    def _sample(self) -> None:
        while not self.stop.wait(0.2):
            self.last.update(self.snapshot())

    def __enter__(self) -> CpuMeter:
        self.first = self.snapshot()
        self.last = dict(self.first)
        if self.ray:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.ray:
            self.thread.join()
        self.last.update(self.snapshot())

    def mark(self) -> None:
        """Note everyone's CPU now (once): what follows is the run after start-up."""
        if self.marked is None:
            self.marked = self.snapshot()

    def spent(self, after_mark: bool = False) -> dict[str, float]:
        """CPU seconds by role over the block, or from the mark to its end."""
        base = (self.marked or {}) if after_mark else self.first
        out: dict[str, float] = {}
        for pid, (role, cpu) in self.last.items():
            out[role] = out.get(role, 0.0) + cpu - base.get(pid, (role, 0.0))[1]
        return out


@contextmanager
def loopback(latency_ms: float) -> Iterator[str]:
    """A loopback server subprocess (default responder); yields its OpenAI base_url."""
    cmd = [sys.executable, "-m", "tradebench.llm.loopback", "--latency-ms", str(latency_ms)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
        SERVERS[url] = proc.pid
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def grid(dataset: Path, url: str, episodes: int, steps: int, executor: str) -> RunSpec:
    """`episodes` model episodes (one per seed) of `steps` days, all at once."""
    return RunSpec.model_validate(
        {
            "dataset": str(dataset),
            "windows": [{"start": "2022-03-01", "end": "2022-04-29"}],
            "modes": ["memory_only"],
            "masks": ["blinded"],
            "seeds": list(range(episodes)),
            "agents": [
                {
                    "name": "m",
                    "provider": "openai",
                    "model": "perf",
                    "base_url": url,
                    "temperature": 0.7,
                    "max_tokens": 256,
                    "max_steps": steps,
                }
            ],
            "concurrency": episodes,
            "executor": executor,
        }
    )


def measure(
    spec: RunSpec, out: Path, latency_s: float, meter: CpuMeter | None = None
) -> dict[str, Any]:
    """Run `spec` into `out`; wall, calls, steps and efficiency against the ideal (and
    `meter` marked at the first completed step)."""
    progress = RunProgress()
    stamps: list[tuple[float, int]] = []

    def stamp(p: RunProgress) -> None:
        stamps.append((time.perf_counter(), p.steps_done))
        if meter is not None and p.steps_done > 0:
            meter.mark()

    progress.listeners.append(stamp)
    start = time.perf_counter()
    asyncio.run(run_spec(spec, out, progress))
    wall = time.perf_counter() - start
    calls = json.loads((out / BUDGET_FILE).read_text())["calls"]
    ideal = calls / len(spec.seeds) * latency_s
    # after start-up: from the first completed step to the last, against the ideal of the
    # steps after each episode's first
    steps = progress.steps_done
    first_step = next(t for t, n in stamps if n > 0) - start
    steady_ideal = ideal * (1 - len(spec.seeds) / max(steps, 1))
    steady = max(wall - first_step, 1e-9)
    return {
        "wall_s": wall,
        "calls": calls,
        "steps": steps,
        "calls_per_s": calls / wall,
        "ideal_s": ideal,
        "efficiency": ideal / wall,
        "startup_s": first_step,
        "steady_efficiency": steady_ideal / steady,
    }


def actor_startup(spec: RunSpec, tmp: Path) -> float:
    """Seconds to start one model actor and hear back from it (paid once per run)."""
    services = Services.start(spec.budget, None, tmp / "startup.sqlite", "off")
    try:
        start = time.perf_counter()
        actor = ray.remote(ModelWorker).options(num_cpus=0).remote(spec, services)
        ray.get(actor.pid.remote())
        elapsed = time.perf_counter() - start
        ray.kill(actor)
    finally:
        services.stop()
    return elapsed


def project(calls_per_step: float, args: argparse.Namespace, efficiency: float) -> str:
    """Wall time of the full grid: each model's calls at its endpoint's rate limit, or the
    cluster's concurrency at the measured efficiency, whichever binds."""
    episodes_per_model = MODES * MASKS * args.seeds
    calls_per_model = episodes_per_model * args.days * calls_per_step
    by_rate = calls_per_model / args.rpm  # minutes; models run side by side
    by_concurrency = (
        args.models * calls_per_model * args.provider_latency_s / (args.concurrency * efficiency)
    ) / 60
    binding = "rate limit" if by_rate >= by_concurrency else "concurrency"
    return (
        f"full grid: {args.models} models x {MODES} modes x {MASKS} masks x {args.seeds} seeds "
        f"x {args.days} days = {args.models * episodes_per_model} episodes, "
        f"{args.models * calls_per_model:,.0f} calls ({calls_per_step:.2f} per step)\n"
        f"  at {args.rpm} requests/min per model endpoint: {by_rate / 60:.1f} h\n"
        f"  at {args.concurrency} episodes in flight, {args.provider_latency_s:.1f} s a call, "
        f"{efficiency:.0%} efficiency: {by_concurrency / 60:.1f} h\n"
        f"  projected wall: {max(by_rate, by_concurrency) / 60:.1f} h ({binding} binds)"
    )


def main(argv: list[str] | None = None) -> None:
    """Measure both executors at each level and print the table and the projection."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--levels", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rpm", type=float, default=500.0, help="requests/min per endpoint")
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--days", type=int, default=548)
    parser.add_argument("--concurrency", type=int, default=128, help="of the projected grid")
    parser.add_argument("--provider-latency-s", type=float, default=4.0)
    args = parser.parse_args(argv)
    latency = args.latency_ms / 1000
    connect(None)
    print(f"ray {ray.__version__}, cluster CPUs {ray.cluster_resources().get('CPU', 0):.0f}")
    with tempfile.TemporaryDirectory() as tmp_name, loopback(args.latency_ms) as url:
        tmp = Path(tmp_name)
        dataset = tmp / "synth"
        synthesize(dataset, SynthConfig(seed=0))
        startup = actor_startup(grid(dataset, url, 1, 1, "ray"), tmp)
        print(f"model actor start-up: {startup:.2f} s (once per actor per run)")
        print(f"latency {args.latency_ms:.0f} ms, {args.steps} steps per episode")
        print(f"{'episodes':>8} {'executor':>8} {'wall s':>8} {'calls':>6} {'calls/s':>8} "
              f"{'ideal s':>8} {'eff.':>6} {'1st step s':>10} {'eff. after':>10}")  # fmt: skip
        last: dict[str, Any] = {}
        for level in args.levels:
            for executor in ("local", "ray"):
                spec = grid(dataset, url, level, args.steps, executor)
                row = measure(spec, tmp / f"{executor}-{level}", latency)
                last = row
                print(f"{level:>8} {executor:>8} {row['wall_s']:>8.2f} {row['calls']:>6} "
                      f"{row['calls_per_s']:>8.1f} {row['ideal_s']:>8.2f} "
                      f"{row['efficiency']:>6.0%} {row['startup_s']:>10.2f} "
                      f"{row['steady_efficiency']:>10.0%}")  # fmt: skip
        top = max(args.levels)
        per_call: dict[str, tuple[float, float]] = {}
        """executor -> CPU ms per call of every process but the server: whole run, and
        after start-up."""
        with loopback(0.0) as fast:
            for executor in ("local", "ray"):
                spec = grid(dataset, fast, top, args.steps, executor)
                server_cpu = cpu_seconds(SERVERS[fast])
                with CpuMeter(ray=executor == "ray") as meter:
                    row = measure(spec, tmp / f"c-{executor}", 1e-9, meter)
                server_cpu = cpu_seconds(SERVERS[fast]) - server_cpu
                ceiling = (row["calls"] - top) / max(row["wall_s"] - row["startup_s"], 1e-9)
                print(
                    f"ceiling ({executor}, {top} episodes, 0 ms): {ceiling:.0f} calls/s after "
                    f"start-up; at {latency * 1000:.0f} ms the ideal is {top / latency:.0f} "
                    f"calls/s, so efficiency <= {min(ceiling * latency / top, 1):.0%}"
                )
                ms, ms_after = 1000 / row["calls"], 1000 / max(row["calls"] - top, 1)
                whole, after = meter.spent(), meter.spent(after_mark=True)
                where = "this process" if executor == "local" else "the driver (workers apart)"
                print(
                    f"  CPU per call: loopback server {server_cpu * ms:.1f} ms, "
                    f"{where} {whole['this process'] * ms:.1f} ms (whole run, start-up included)"
                )
                if executor == "ray":
                    views = (("whole run", whole, ms), ("after start-up", after, ms_after))
                    for label, spent, unit in views:
                        roles = sorted(spent.items(), key=lambda kv: -kv[1])
                        parts = ", ".join(
                            f"{'driver' if r == 'this process' else r} {c * unit:.1f}"
                            for r, c in roles
                            if c * unit >= 0.05
                        )
                        print(f"  Ray, ms per call ({label}): {parts}")
                per_call[executor] = (sum(whole.values()) * ms, sum(after.values()) * ms_after)
        for i, label in ((0, "whole run"), (1, f"after start-up, {top} first calls apart")):
            ray_ms, local_ms = per_call["ray"][i], per_call["local"][i]
            print(
                f"Ray CPU per call {ray_ms:.1f} ms / local CPU per call {local_ms:.1f} ms = "
                f"{ray_ms / local_ms:.2f}x ({label}; every process but the loopback server)"
            )
        print(project(last["calls"] / max(last["steps"], 1), args, last["steady_efficiency"]))


if __name__ == "__main__":
    main()
