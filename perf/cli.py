"""CLI start-up: `tradebench --help` and an argument error, as whole processes.

Each case runs as a fresh process, paired in one loop with the same case against a minimal
typer application that imports lazily (written to a scratch file here: two commands, rich
help, the work's imports inside the command), so both sides see the same machine load.
Reported: median wall time and median CPU time (user + system, from `wait4`), which is less
sensitive to other processes on a shared machine, and the ratio ours / minimal.

Run: python perf/cli.py [--repeats 9] [--exe PATH_TO_tradebench] [--before-src OLD/src]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MINIMAL = '''
from typing import Annotated

import typer

app = typer.Typer(help="A minimal lazy typer app.", no_args_is_help=True)


@app.command()
def build(out: Annotated[str, typer.Option("--out", help="File to write.")]) -> None:
    """Build something (imports its work on use)."""
    import json

    print(json.dumps(out))


@app.command()
def check(path: str) -> None:
    """Check something."""
    print(path)


app()
'''


def _run(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (output discarded, any exit code); a
    leading `PYTHONPATH=DIR` item is set in its environment."""
    env = None
    if argv[0].startswith("PYTHONPATH="):
        env = {**os.environ, "PYTHONPATH": argv[0].split("=", 1)[1]}
        argv = argv[1:]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0  # reaped by wait4
    return wall, usage.ru_utime + usage.ru_stime


def _tradebench_exe(given: str | None) -> list[str]:
    """The real console script (not a version-manager shim), else `python -m`."""
    if given:
        return [given]
    beside = Path(sys.executable).with_name("tradebench")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("tradebench")
    return [found] if found else [sys.executable, "-m", "tradebench.cli"]


def main() -> None:
    """Time each case against its minimal-app twin, interleaved, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--exe", help="tradebench console script to time")
    parser.add_argument(
        "--before-src",
        type=Path,
        help="a `src` folder of another tradebench version: its `python -m tradebench.cli` "
        "is timed in the same loop (e.g. `git archive HEAD src | tar -x -C /tmp/old`)",
    )
    args = parser.parse_args()
    ours = _tradebench_exe(args.exe)
    with tempfile.TemporaryDirectory() as tmp:
        minimal = [sys.executable, str(Path(tmp) / "minimal.py")]
        Path(minimal[1]).write_text(MINIMAL)
        cases = {
            "--help": ([*ours, "--help"], [*minimal, "--help"]),
            "argument error (mcq build --bogus)": (
                [*ours, "mcq", "build", "--bogus"],
                [*minimal, "build", "--bogus"],
            ),
            "python -m tradebench.cli --help": (
                [sys.executable, "-m", "tradebench.cli", "--help"],
                [*minimal, "--help"],
            ),
        }
        if args.before_src:
            old = [f"PYTHONPATH={args.before_src}", sys.executable, "-m", "tradebench.cli"]
            cases["--before-src: --help"] = ([*old, "--help"], [*minimal, "--help"])
            cases["--before-src: mcq build --bogus"] = (
                [*old, "mcq", "build", "--bogus"],
                [*minimal, "build", "--bogus"],
            )
        for argv in [a for pair in cases.values() for a in pair]:
            _run(argv)  # warm the file cache and bytecode once
        samples: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in cases}
        for _ in range(args.repeats):
            for name, (mine, theirs) in cases.items():
                samples[name].append((*_run(mine), *_run(theirs)))
    print(f"whole processes, median of {args.repeats} interleaved pairs; ours: {' '.join(ours)}")
    print(f"{'case':38s} {'ours wall':>10s} {'minimal':>8s} {'ours cpu':>9s} {'minimal':>8s}")
    for name, rows in samples.items():
        wall, cpu, wall_m, cpu_m = (statistics.median(r[i] for r in rows) for i in range(4))
        print(
            f"{name:38s} {wall:9.3f}s {wall_m:7.3f}s {cpu:8.3f}s {cpu_m:7.3f}s"
            f"   cpu ours/minimal {cpu / cpu_m:.2f}x"
        )
    print(f"machine load (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
