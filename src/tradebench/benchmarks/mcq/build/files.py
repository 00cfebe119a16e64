"""Build a question file: load the spec's bars (recording their digest), build, write JSONL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tradebench.benchmarks.mcq.bars import resolve
from tradebench.benchmarks.mcq.build.builder import BuildResult, BuildSpec, build
from tradebench.benchmarks.mcq.build.pool import BacktestPool
from tradebench.benchmarks.mcq.records import write_jsonl


def _noop() -> None:
    return None


def build_file(
    spec: BuildSpec,
    out: Path,
    tick: Callable[[], None] = _noop,
    pool: BacktestPool | None = None,
) -> BuildResult:
    """Load the spec's bars (recording their digest), build the questions, write JSONL;
    an open `pool` runs the backtests in its workers (`build`)."""
    data, bars = resolve(spec.data)
    result = build(spec.model_copy(update={"data": data}), bars, tick, pool=pool)
    write_jsonl(result.records, out)
    return result
