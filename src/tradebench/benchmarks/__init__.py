"""Benchmarks: one folder each, registered here by name, one line each.

A benchmark implements `runs.protocol.Benchmark` (options, grid, one episode, summary
columns, report sections); the harness in `runs/` runs any registered one. Entries are
`module:attribute` paths, imported when a spec names them.
"""

from __future__ import annotations

from pathlib import Path

from tradebench.report import DEFAULT_SECTIONS, ReportOptions
from tradebench.report import build_report as build_sections_report
from tradebench.report.load import read_spec
from tradebench.runs.executor import RunProgress, execute
from tradebench.runs.protocol import Benchmark, BenchmarkRegistry
from tradebench.runs.spec import RunSpec

BENCHMARKS = BenchmarkRegistry()
BENCHMARKS.register("portfolio", "tradebench.benchmarks.portfolio.benchmark:BENCHMARK")
BENCHMARKS.register("single_stock", "tradebench.benchmarks.single_stock.benchmark:BENCHMARK")
BENCHMARKS.register("mandate", "tradebench.benchmarks.mandate.benchmark:BENCHMARK")


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark called `name` (ConfigError when unknown)."""
    return BENCHMARKS.get(name)


async def run_spec(
    spec: RunSpec, run_dir: Path, progress: RunProgress | None = None, add_cells: bool = False
) -> Path:
    """Run every unfinished episode of `spec` (its `benchmark`) into `run_dir`; returns the
    summary path. Rerunning resumes; `add_cells` lets a grown spec add its new cells."""
    benchmark = get_benchmark(spec.benchmark)
    return await execute(benchmark, spec, Path(run_dir), progress, add_cells)


def build_report(run_dir: Path, options: ReportOptions | None = None) -> Path:
    """Write `run_dir/report.html`: the generic sections plus those of the run's benchmark
    (named in its `spec.yaml`; portfolio when absent)."""
    name = str(read_spec(Path(run_dir)).get("benchmark") or "portfolio")
    sections = (*DEFAULT_SECTIONS, *get_benchmark(name).report_sections)
    return build_sections_report(Path(run_dir), options, sections)
