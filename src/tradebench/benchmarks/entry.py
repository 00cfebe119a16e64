"""The benchmark registry and the entry points that run or report any registered benchmark.

`tradebench.benchmarks` re-exports these names; they live here so that importing one
benchmark's modules (e.g. `tradebench mcq build`) does not load the harness and the report.
"""

from __future__ import annotations

from pathlib import Path

from tradebench.registry import Registry
from tradebench.report import ReportOptions, build_benchmark_report
from tradebench.report.load import read_spec
from tradebench.runs.executor import RunProgress, execute
from tradebench.runs.protocol import Benchmark
from tradebench.runs.spec import RunSpec

BENCHMARKS: Registry[Benchmark] = Registry("benchmark", group="tradebench.benchmarks", paths=True)
"""Benchmarks by name: the built-in ones below (imported when a spec names them), those of
installed packages (entry points of `tradebench.benchmarks`, each a `Benchmark` instance) and
`module:ATTRIBUTE` paths."""
BENCHMARKS.register("portfolio", "tradebench.benchmarks.portfolio.benchmark:BENCHMARK")
BENCHMARKS.register("single_stock", "tradebench.benchmarks.single_stock.benchmark:BENCHMARK")
BENCHMARKS.register("mandate", "tradebench.benchmarks.mandate.benchmark:BENCHMARK")
BENCHMARKS.register("horizon", "tradebench.benchmarks.horizon.benchmark:BENCHMARK")


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark called `name` (ConfigError when unknown)."""
    return BENCHMARKS.get(name)


async def run_spec(
    spec: RunSpec,
    run_dir: Path,
    progress: RunProgress | None = None,
    add_cells: bool = False,
    ray_address: str | None = None,
) -> Path:
    """Run every unfinished episode of `spec` (its `benchmark`) into `run_dir`; returns the
    summary path. Rerunning resumes; `add_cells` lets a grown spec add its new cells;
    `ray_address` is the cluster of `executor: ray` (None: `RAY_ADDRESS` or a local one)."""
    benchmark = get_benchmark(spec.benchmark)
    spec.budget.check_prices(a.model_config_() for a in spec.llm_agents())  # before any work
    return await execute(benchmark, spec, Path(run_dir), progress, add_cells, ray_address)


def build_report(run_dir: Path, options: ReportOptions | None = None) -> Path:
    """Write `run_dir/report.html` for the run's benchmark (named in its `spec.yaml`;
    portfolio when absent): its summary columns, the common sections, the broker ones when
    it trades through the broker, then its own."""
    name = str(read_spec(Path(run_dir)).get("benchmark") or "portfolio")
    return build_benchmark_report(Path(run_dir), get_benchmark(name), options)
