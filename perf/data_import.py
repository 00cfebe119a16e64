"""`tradebench data import` of the real CSI300 members (1,048,820 rows, with index and
membership), as whole processes, against another tradebench version in the same loop.

Both sides run the same command in alternated pairs (the order swaps each pair), output
discarded (not a terminal: no bar drawn, but the import still reports its phases and reads
the bars file batch by batch). Reported: wall and CPU seconds (user + system, from
`wait4`) per side as median (min .. max) and the pairwise ratios, and the machine load.

Run: python perf/data_import.py --before-src /tmp/old/src [--pairs 3]
(`git archive BASE src | tar -x -C /tmp/old` gives an older version's `src`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, shared_data, spread


def _command(src: Path, out: Path) -> tuple[list[str], dict[str, str]]:
    data = shared_data()
    argv = [
        sys.executable,
        "-m",
        "tradebench.cli",
        "data",
        "import",
        str(data / "cn" / "csi300_members_daily_2018_2026.parquet"),
        "-o",
        str(out),
        "--market",
        "cn",
        "--index",
        str(data / "cn" / "csi300_index_daily.csv"),
        "--index-symbol",
        "SH000300",
        "--membership",
        str(data / "universe" / "csi300_membership.csv"),
    ]
    return argv, {**os.environ, "PYTHONPATH": str(src)}


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (it must succeed)."""
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=_quiet())
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(argv)} (PYTHONPATH={env['PYTHONPATH']})")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def _quiet() -> list[tuple]:
    return [
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]


def main() -> None:
    """Time this version's import against `--before-src`'s, alternated, and print both."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    sides = {"this version": ROOT / "src", "before": args.before_src.resolve()}
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for name in order:
                argv, env = _command(sides[name], Path(tmp) / f"{name}-{i}")
                samples[name].append(_run(argv, env))
    for name, rows in samples.items():
        wall, cpu = [r[0] for r in rows], [r[1] for r in rows]
        print(f"{name:13s} wall {spread(wall, fmt='.1f')} s, CPU {spread(cpu, fmt='.1f')} s")
    for k, what in ((0, "wall"), (1, "CPU")):
        ratios = [
            a[k] / b[k] for a, b in zip(samples["this version"], samples["before"], strict=True)
        ]
        print(f"this version / before, {what}: {spread(ratios, fmt='.2f')} (pairwise)")
    print(f"machine load (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
