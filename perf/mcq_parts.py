"""Where the CPU of `mcq build --all-templates` and `mcq check` goes, part by part.

Each repeat runs two fresh interpreters, one per process a user runs, that import and work
in the order the CLI does (the build in one process, as `--workers 1`) and read
`time.process_time()` between the parts; the parent adds the interpreter's start-up and
exit (its whole CPU, from `wait4`, less the parts). Nothing is shared between the processes
or the repeats (no cache). Medians of the repeats, CPU seconds.

Then a floor: what any build and check of these questions from this Parquet file costs
at the least, whatever their code: two bare interpreters' start-up and exit, `import
backtrader`, the cheaper of the two Parquet readers' imports (pyarrow, DuckDB), `import
numpy` for the checker's arithmetic, and the backtests' `cerebro.run()` calls alone (the
same strategies, feed and configs as the build's cache holds, each timed around `run()`
only). Each import is timed in a fresh interpreter of its own, alternated with the others.

Run: python perf/mcq_parts.py [--bars sp500_daily_adj_2005_2025.parquet] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/us/sp500_daily_adj_2005_2025.parquet"

_BUILD = """
import json, sys, time
parts, last = {}, time.process_time()
def part(name):
    global last
    now = time.process_time()
    parts[name] = now - last
    last = now
import tradebench.cli.mcq
part("CLI (typer, rich, pydantic)")
import pandas, pyarrow.parquet
part("pandas, numpy, pyarrow")
import backtrader
part("backtrader")
import datetime as dt
from pathlib import Path
from tradebench.benchmarks.mcq.bars import resolve
from tradebench.benchmarks.mcq.build.backtest import run_backtest
from tradebench.benchmarks.mcq.build.builder import BuildSpec, build
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.records import write_jsonl
part("builder modules (pydantic models, templates)")
ref = DataRef(kind="long_parquet", path=sys.argv[1], symbol="AAPL",
              start=dt.date(2020, 1, 1), end=dt.date(2024, 1, 1))
ref, bars = resolve(ref)
part("bars (pyarrow, the row group holding AAPL)")
spent = []
def timed(bars, config):
    start = time.process_time()
    log = run_backtest(bars, config)
    spent.append(time.process_time() - start)
    return log
# Every backtest of a build goes through one of these two names (the cache's on-demand run
# and the pool's prefetch, which runs in this process with one worker).
import tradebench.benchmarks.mcq.build.builder as builder_module
import tradebench.benchmarks.mcq.build.pool as pool_module
builder_module.run_backtest = pool_module.run_backtest = timed
result = build(BuildSpec(data=ref, seed=42), bars)
assert len(spent) == result.backtests, (len(spent), result.backtests)
write_jsonl(result.records, Path(sys.argv[2]))
now = time.process_time()
parts[f"{len(spent)} backtrader backtests"] = sum(spent)
parts["templates, options, JSONL"] = now - last - sum(spent)
print(json.dumps(parts))
"""

_CHECK = """
import json, sys, time
parts, last = {}, time.process_time()
def part(name):
    global last
    now = time.process_time()
    parts[name] = now - last
    last = now
import tradebench.cli.mcq
part("CLI (typer, rich, pydantic)")
import numpy
part("numpy")
from pathlib import Path
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.records import read_jsonl
part("checker modules (pydantic models)")
import duckdb
part("duckdb")
records = read_jsonl(Path(sys.argv[1]))
part("read and validate the JSONL")
from tradebench.benchmarks.mcq.check.series import load_series
bars = load_series(records[0].config.data)
part("bars (DuckDB query)")
report = check_records(records, loader=lambda ref: bars)
assert report.ok
part(f"{report.backtests} re-runs and judging")
print(json.dumps(parts))
"""

_RUNS = """
import datetime as dt, json, sys, time
from tradebench.benchmarks.mcq.bars import resolve
from tradebench.benchmarks.mcq.build.backtest import cerebro_for, list_feed
from tradebench.benchmarks.mcq.build.builder import BacktestCache, BuildSpec, build
from tradebench.benchmarks.mcq.config import DataRef
ref = DataRef(kind="long_parquet", path=sys.argv[1], symbol="AAPL",
              start=dt.date(2020, 1, 1), end=dt.date(2024, 1, 1))
ref, bars = resolve(ref)
cache = BacktestCache(bars)  # the build's backtests, each with its config
result = build(BuildSpec(data=ref, seed=42), bars, cache=cache)
configs = [log.config for log in cache.logs.values()]
assert len(configs) == result.backtests, (len(configs), result.backtests)
spent = 0.0
for config in configs:
    cerebro = cerebro_for(list_feed(bars), config, analyzers=False)
    start = time.process_time()
    cerebro.run()
    spent += time.process_time() - start
print(json.dumps({f"{len(configs)} backtests, cerebro.run() alone": spent}))
"""

_IMPORT = """
import json, time
start = time.process_time()
import {module}
print(json.dumps({{"import {module}": time.process_time() - start}}))
"""
"""One import timed inside a fresh interpreter; the rest of its CPU is start-up and exit."""

_BARE = "import json\nprint(json.dumps({}))"
"""A bare interpreter (the same `json` the import children load): start-up and exit only."""

_FLOOR_IMPORTS = ("backtrader", "pyarrow.parquet", "duckdb", "numpy")


_START_UP = "interpreter start-up and exit"


def _child(code: str, *args: str) -> dict[str, float]:
    """Run `code` in a fresh interpreter: its parts, and its start-up and exit (the rest of
    its CPU seconds)."""
    launcher = (
        "import os, sys, json\n"
        "pid = os.posix_spawn(sys.executable, [sys.executable, '-c', sys.argv[1], *sys.argv[2:]],"
        " os.environ, file_actions=[(os.POSIX_SPAWN_OPEN, 1, sys.argv[-1], os.O_WRONLY, 0)])\n"
        "_, status, usage = os.wait4(pid, 0)\n"
        "print(json.dumps({'code': os.waitstatus_to_exitcode(status),"
        " 'cpu': usage.ru_utime + usage.ru_stime}))\n"
    )
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        done = subprocess.run(
            [sys.executable, "-S", "-c", launcher, code, *args, out.name],
            capture_output=True,
            text=True,
            check=True,
        )
        run = json.loads(done.stdout.strip().splitlines()[-1])
        if run["code"] != 0:
            sys.exit(f"part run failed:\n{done.stderr[-2000:]}")
        parts = json.loads(Path(out.name).read_text())
    return {_START_UP: run["cpu"] - sum(parts.values()), **parts}


def main() -> None:
    """Measure both processes `--repeats` times, alternating, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bars", type=Path, default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"build": [], "check": []}
    floor: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        questions = str(Path(tmp) / "mcq.jsonl")
        for _ in range(args.repeats):
            runs["build"].append(_child(_BUILD, str(args.bars), questions))
            runs["check"].append(_child(_CHECK, questions))
            floor.setdefault(_START_UP, []).append(_child(_BARE)[_START_UP])
            for code in [_IMPORT.format(module=m) for m in _FLOOR_IMPORTS] + [_RUNS]:
                # each child's own start-up and exit carries its imports' clean-up: not bare
                for name, value in _child(code, str(args.bars)).items():
                    if name != _START_UP:
                        floor.setdefault(name, []).append(value)
    total = 0.0
    for process, samples in runs.items():
        medians = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
        print(f"mcq {process}: {sum(medians.values()):.2f} s CPU (sum of the part medians)")
        for name, value in medians.items():
            print(f"  {name:48s} {value:5.2f} s")
        total += sum(medians.values())
    print(f"both processes                                     {total:5.2f} s")
    _print_floor({k: statistics.median(v) for k, v in floor.items()}, total)
    print(f"machine load (1 min) {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


def _print_floor(medians: dict[str, float], total: float) -> None:
    """The least a build and a check must spend, beside the two processes' sum."""
    start_up = medians.pop(_START_UP)
    parquet = min(medians.pop("import pyarrow.parquet"), medians.pop("import duckdb"))
    parts = {
        "2 bare interpreters' start-up and exit": 2 * start_up,
        "import backtrader": medians.pop("import backtrader"),
        "a Parquet reader (the cheaper import)": parquet,
        "import numpy (the checker)": medians.pop("import numpy"),
        **medians,
    }
    least = sum(parts.values())
    print(f"floor: {least:.2f} s CPU, {least / total:.0%} of the two processes")
    for name, value in parts.items():
        print(f"  {name:48s} {value:5.2f} s")
    print(f"above the floor (pandas, pydantic, CLI, questions) {total - least:5.2f} s")


if __name__ == "__main__":
    main()
