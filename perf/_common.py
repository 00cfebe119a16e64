"""Helpers shared by the perf scripts: locating the real data and timing blocks."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 3
"""Default number of timed repeats per measurement (the median is reported)."""

T = TypeVar("T")


def shared_data() -> Path:
    """The real data folder (`TRADEBENCH_SHARED_DATA` or `../shared/data`), or exit."""
    env = os.environ.get("TRADEBENCH_SHARED_DATA")
    path = Path(env) if env else ROOT.parent / "shared" / "data"
    if not (path / "README.md").exists():
        sys.exit(f"real data not found at {path}; set TRADEBENCH_SHARED_DATA")
    return path


@contextmanager
def timed(label: str, results: dict[str, float]) -> Iterator[None]:
    """Record the wall time of a block under `label`."""
    start = time.perf_counter()
    yield
    results[label] = time.perf_counter() - start


def import_real_cn(out: Path, start: str | None = None, end: str | None = None) -> Path:
    """Import the real CSI300 members (with index and membership) into `out`."""
    from tradebench.data.importers.long import LongImport, import_long

    data = shared_data()
    import_long(
        LongImport(
            source=data / "cn" / "csi300_members_daily_2018_2026.parquet",
            out=out,
            index_file=data / "cn" / "csi300_index_daily.csv",
            index_symbol="SH000300",
            membership_file=data / "universe" / "csi300_membership.csv",
            start=start,
            end=end,
        )
    )
    return out


def repeat_timed(fn: Callable[[], T], repeats: int = REPEATS) -> tuple[list[float], T]:
    """Wall times of `repeats` calls of `fn` (seconds) and the last call's result."""
    times: list[float] = []
    result: T
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def spread(times: list[float], unit: float = 1.0, fmt: str = ".3f") -> str:
    """`median (min .. max, n=k)` of `times` scaled by `unit`."""
    scaled = [t * unit for t in times]
    return (
        f"{statistics.median(scaled):{fmt}} ({min(scaled):{fmt}} .. {max(scaled):{fmt}}, "
        f"n={len(scaled)})"
    )


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children, user + system."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def alternate(
    first: Callable[[], object], second: Callable[[], object], pairs: int
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Time `first` and `second` in `pairs` alternated pairs (the order swaps each pair, so
    neither side always runs warm or first); returns each side's (wall, CPU) seconds."""
    sides: tuple[list[tuple[float, float]], list[tuple[float, float]]] = ([], [])
    for i in range(max(pairs, 1)):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for side in order:
            fn = first if side == 0 else second
            wall, cpu = time.perf_counter(), _cpu()
            fn()
            sides[side].append((time.perf_counter() - wall, _cpu() - cpu))
    return sides


def ratio_spread(slow: list[tuple[float, float]], fast: list[tuple[float, float]]) -> str:
    """The pairwise ratios slow/fast as `wall median (min .. max), CPU median (min .. max)`."""
    parts = []
    for k, name in ((0, "wall"), (1, "CPU")):
        ratios = [s[k] / f[k] for s, f in zip(slow, fast, strict=True) if f[k] > 0]
        if not ratios:
            parts.append(f"{name} n/a")
            continue
        parts.append(
            f"{name} {statistics.median(ratios):.1f}x ({min(ratios):.1f} .. {max(ratios):.1f})"
        )
    return ", ".join(parts) + f" over {len(slow)} alternated pairs"
