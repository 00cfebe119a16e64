"""Helpers shared by the perf scripts: locating the real data and timing blocks."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
