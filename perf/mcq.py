"""MCQ benchmark speed: build and independently check the base pool (AAPL 2020-2024, seed 42).

Two measurements, each repeated and reported as the median:
- in process: bars load, build (with the JSONL write) and check (re-reading the file and
  the bars), plus the set's properties (checker agreement, distractor distances, letters);
- whole processes, as a user runs them: `tradebench mcq build --all-templates` then
  `tradebench mcq check`, start-up and imports included: wall and CPU seconds (CPU is less
  sensitive to other work on a shared machine) and the peak memory of the larger process.

A ratio against another implementation is printed only when that implementation ran in the
same invocation: pass `--public-build CMD` and `--public-check CMD` (shell commands that
build and check the same questions with, e.g., a Backtrader-Bench checkout; `{out}` in a
command is replaced by a scratch folder). Without them no ratio is printed.

Run: python perf/mcq.py [--bars sp500_daily_adj_2005_2025.parquet] [--repeats 3]
     [--public-build "..." --public-check "..."]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tradebench.benchmarks.mcq.bars import resolve
from tradebench.benchmarks.mcq.build.builder import BuildSpec, build
from tradebench.benchmarks.mcq.build.stats import distractor_stats
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.records import read_jsonl, write_jsonl

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/us/sp500_daily_adj_2005_2025.parquet"
START, END = "2020-01-01", "2024-01-01"


def _ref(source: Path) -> DataRef:
    return DataRef(
        kind="long_parquet",
        path=str(source),
        symbol="AAPL",
        start=dt.date.fromisoformat(START),
        end=dt.date.fromisoformat(END),
    )


def in_process(source: Path) -> tuple[dict[str, float], object, object]:
    """One in-process pass: phase times, the build result and the check report."""
    t0 = time.perf_counter()
    ref, bars = resolve(_ref(source))
    t1 = time.perf_counter()
    result = build(BuildSpec(data=ref, seed=42), bars)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "mcq.jsonl"
        write_jsonl(result.records, out)
        t2 = time.perf_counter()
        report = check_records(read_jsonl(out))
        t3 = time.perf_counter()
    return {"load": t1 - t0, "build": t2 - t1, "check": t3 - t2}, result, report


@dataclass(frozen=True)
class ProcessRun:
    """Whole-process cost of commands run one after the other (each must succeed)."""

    wall_s: float
    cpu_s: float
    """User + system seconds of the processes and everything they waited for."""
    peak_mb: float
    """The largest peak resident set of any one process (MiB)."""


_LAUNCHER = """
import json, os, sys, time
start = time.perf_counter()
out = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
pid = os.posix_spawn("/bin/sh", ["/bin/sh", "-c", "exec " + sys.argv[1]], os.environ,
                     file_actions=out)
_, status, usage = os.wait4(pid, 0)
print(json.dumps({"code": os.waitstatus_to_exitcode(status),
                  "wall": time.perf_counter() - start,
                  "cpu": usage.ru_utime + usage.ru_stime,
                  "peak_kb": usage.ru_maxrss}))
"""
"""Runs one command and reports its wall, CPU and peak memory. A process's peak resident
set (`ru_maxrss`) includes what its parent held when it forked, so the commands are
started from this small interpreter (a few MB), not from this script (pandas and the
builder loaded, ~150 MB), which would otherwise be counted as theirs."""


def _timed(commands: list[str]) -> ProcessRun:
    """Wall, CPU and peak memory of shell commands run in turn (`exec`: no extra shell),
    each started by `_LAUNCHER`."""
    wall, cpu, peak = 0.0, 0.0, 0.0
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-S", "-c", _LAUNCHER, command], capture_output=True, text=True
        )
        if done.returncode != 0 or not done.stdout.strip():
            sys.exit(f"launcher failed: {command}\n{done.stderr[-2000:]}")
        run = json.loads(done.stdout.strip().splitlines()[-1])
        if run["code"] != 0:
            sys.exit(f"command failed ({run['code']}): {command}\n{done.stderr[-2000:]}")
        wall, cpu = wall + run["wall"], cpu + run["cpu"]
        peak = max(peak, run["peak_kb"] / 1024)
    return ProcessRun(wall, cpu, peak)


def _median(runs: list[ProcessRun]) -> ProcessRun:
    """Field-wise medians of repeated runs."""
    return ProcessRun(
        statistics.median(r.wall_s for r in runs),
        statistics.median(r.cpu_s for r in runs),
        statistics.median(r.peak_mb for r in runs),
    )


def _pair_ratios(slow: list[ProcessRun], fast: list[ProcessRun]) -> str:
    """The pairs' ratios slow/fast as `median (min .. max)`, wall and CPU."""
    parts = []
    for name, field in (("wall", "wall_s"), ("cpu", "cpu_s")):
        ratios = [getattr(s, field) / getattr(f, field) for s, f in zip(slow, fast, strict=True)]
        parts.append(
            f"{statistics.median(ratios):.2f}x {name} ({min(ratios):.2f} .. {max(ratios):.2f})"
        )
    return ", ".join(parts) + f" over {len(slow)} alternated pairs"


def ours(source: Path, out: Path) -> list[str]:
    """The two commands a user runs."""
    q = shlex.quote(str(out / "mcq.jsonl"))
    exe = shlex.quote(sys.executable)
    build_cmd = (
        f"{exe} -m tradebench.cli mcq build --bars {shlex.quote(str(source))} --symbol AAPL "
        f"--start {START} --end {END} --all-templates --seed 42 -o {q}"
    )
    return [build_cmd, f"{exe} -m tradebench.cli mcq check {q}"]


def main() -> None:
    """Measure, then print medians and (only with a competitor) the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bars", type=Path, default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--public-build", help="shell command building the same questions")
    parser.add_argument("--public-check", help="shell command checking them")
    args = parser.parse_args()
    runs = [in_process(args.bars) for _ in range(args.repeats)]
    phases = {k: statistics.median(r[0][k] for r in runs) for k in ("load", "build", "check")}
    _, result, report = runs[-1]
    mine_runs: list[ProcessRun] = []
    public_runs: list[ProcessRun] = []
    with tempfile.TemporaryDirectory() as tmp:
        public_cmds = None
        if args.public_build and args.public_check:
            public_cmds = [c.replace("{out}", tmp) for c in (args.public_build, args.public_check)]
        for i in range(args.repeats):  # alternated pairs, so both sides see the same load
            if public_cmds and i % 2 == 1:  # the order swaps each pair
                public_runs.append(_timed(public_cmds))
            mine_runs.append(_timed(ours(args.bars, Path(tmp))))
            if public_cmds and i % 2 == 0:
                public_runs.append(_timed(public_cmds))
    mine = _median(mine_runs)
    n = args.repeats
    print(f"in process, median of {n}:")
    print(f"  bars load                    {phases['load']:6.2f} s")
    print(
        f"  build {len(result.records)} questions          {phases['build']:6.2f} s  "
        f"({result.backtests} backtrader backtests: 5 strategies + alternatives)"
    )
    print(
        f"  check {len(report.verdicts)} questions          {phases['check']:6.2f} s  "
        f"({report.backtests} independent re-runs, bars re-read from the config)"
    )
    total = sum(phases.values())
    print(f"  load + build + check         {total:6.2f} s")
    print(f"whole processes (mcq build, then mcq check), median of {n}:")
    print(
        f"  tradebench                   {mine.wall_s:6.2f} s wall  {mine.cpu_s:6.2f} s cpu  "
        f"peak {mine.peak_mb:5.0f} MB"
    )
    if not public_runs:
        print("  no other implementation ran in this invocation: no ratio (see --public-build)")
    else:
        public = _median(public_runs)
        print(
            f"  the other implementation     {public.wall_s:6.2f} s wall  {public.cpu_s:6.2f} s "
            f"cpu  peak {public.peak_mb:5.0f} MB"
        )
        print(f"  ratio (other / tradebench)   {_pair_ratios(public_runs, mine_runs)}")
    print(f"machine load (1 min)           {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    st = distractor_stats(result.records)
    print(
        f"checker agreement              {len(report.verdicts) - len(report.failures)}"
        f"/{len(report.verdicts)}"
    )
    print(f"skipped (reported)             {len(result.skipped)} of 165 template x strategy")
    print(
        f"nearest distractor (n={st.numeric})   p10 {st.nearest_p10:.1%}  median "
        f"{st.nearest_median:.1%}  p90 {st.nearest_p90:.1%}  max option/answer "
        f"{st.max_spread:.2f}x"
    )
    print(f"answer letters (balanced)      {st.letters}")
    print(f"answer's value rank (numeric)  {st.value_ranks}")


if __name__ == "__main__":
    main()
