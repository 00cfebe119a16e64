"""The library calls behind the CLI verbs: build a question file, check a question file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tradebench.benchmarks.mcq.bars import resolve
from tradebench.benchmarks.mcq.builder import BuildResult, BuildSpec, build
from tradebench.benchmarks.mcq.checker import CheckReport, check_records
from tradebench.benchmarks.mcq.records import read_jsonl, write_jsonl


def _noop() -> None:
    return None


def build_file(spec: BuildSpec, out: Path, tick: Callable[[], None] = _noop) -> BuildResult:
    """Load the spec's bars (recording their digest), build the questions, write JSONL."""
    data, bars = resolve(spec.data)
    result = build(spec.model_copy(update={"data": data}), bars, tick)
    write_jsonl(result.records, out)
    return result


def check_file(path: Path, tick: Callable[[], None] = _noop) -> CheckReport:
    """Re-run and re-derive every question of a JSONL file through the independent checker."""
    return check_records(read_jsonl(path), tick=tick)
