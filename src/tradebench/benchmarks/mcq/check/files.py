"""Check a question file end to end through the independent checker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tradebench.benchmarks.mcq.check.check import CheckReport, check_records
from tradebench.benchmarks.mcq.records import read_jsonl


def _noop() -> None:
    return None


def check_file(path: Path, tick: Callable[[], None] = _noop) -> CheckReport:
    """Re-run and re-derive every question of a JSONL file through the independent checker."""
    return check_records(read_jsonl(path), tick=tick)
