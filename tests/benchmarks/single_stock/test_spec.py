"""Run specs of `benchmark: single_stock`: options validate through the benchmark; specs
written before options moved under `options:` still load."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.benchmarks.single_stock.conftest import spec_dict
from tradebench.benchmarks import get_benchmark, run_spec
from tradebench.benchmarks.single_stock.config import (
    DEFAULT_CELLS,
    FINMEM_TEST,
    SingleStockOptions,
    resolve_tasks,
)
from tradebench.benchmarks.single_stock.report import SINGLE_STOCK_SECTIONS
from tradebench.errors import ConfigError
from tradebench.report.load import load_run
from tradebench.runs.spec import RunSpec

PORTFOLIO = {
    "dataset": "synthetic:cn",
    "windows": [{"start": "2022-03-01", "end": "2022-03-08"}],
    "agents": [{"name": "ew", "baseline": "equal_weight"}],
}


def test_single_stock_block_defaults_and_validation() -> None:
    spec = RunSpec.model_validate({**PORTFOLIO, "benchmark": "single_stock"})
    options = spec.options_as(get_benchmark("single_stock").options_model)
    assert options == SingleStockOptions()
    assert [c.name for c in options.named_cells()] == list(DEFAULT_CELLS)
    assert {c.symbol for c in options.named_cells()} == {"TSLA", "NFLX", "AMZN", "MSFT"}
    assert options.episode_length == 50 and options.nudges == 1
    tasks = resolve_tasks(options, [])
    assert len(tasks) == 12 and {t.start for t in tasks} == {FINMEM_TEST[0]}
    assert {t.end for t in tasks} == {FINMEM_TEST[1]}
    symbols = SingleStockOptions(symbols=["SPY"])  # symbols alone replace the default cells
    assert resolve_tasks(symbols, [FINMEM_TEST])[0].cell == "SPY_20221006-20230410"
    assert len(resolve_tasks(symbols, [FINMEM_TEST])) == 3
    with pytest.raises(ValueError, match="unknown cells"):
        SingleStockOptions(cells=["gme_main"])
    legacy = RunSpec.model_validate(
        {**PORTFOLIO, "benchmark": "single_stock", "single_stock": {"episode_length": 7}}
    )
    assert legacy.options == {"episode_length": 7}
    with pytest.raises(ConfigError, match=r"options\.episode_lenght"):
        RunSpec.model_validate(
            {**PORTFOLIO, "benchmark": "single_stock", "options": {"episode_lenght": 7}}
        ).options_as(SingleStockOptions)
    with pytest.raises(ValueError, match="needs `benchmark: single_stock`"):
        RunSpec.model_validate({**PORTFOLIO, "single_stock": {}})
    with pytest.raises(ValueError, match="unique"):
        SingleStockOptions(symbols=["TSLA", "TSLA"])
    with pytest.raises(ValueError):
        SingleStockOptions(personas=["reckless"])


def test_portfolio_specs_dump_their_benchmark() -> None:
    text = RunSpec.model_validate(PORTFOLIO).dump()
    assert "single_stock" not in text and "benchmark: portfolio" in text


def test_bad_tasks_fail_before_any_model_call(ss_dataset_dir: Path, tmp_path: Path) -> None:
    spec = spec_dict(ss_dataset_dir, "http://127.0.0.1:9/v1", episode_length=5000)
    with pytest.raises(ConfigError, match="episode_length 5000 exceeds"):
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
    spec = spec_dict(ss_dataset_dir, "http://127.0.0.1:9/v1", symbols=["GME"])
    with pytest.raises(ConfigError, match="not in the dataset"):
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run2"))
    spec = spec_dict(ss_dataset_dir, "http://127.0.0.1:9/v1")
    spec["agents"][1] = {"name": "x", "baseline": "equal_weight"}
    with pytest.raises(ConfigError, match="unknown single-stock baseline"):
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run3"))


def test_persona_sections_skip_runs_without_single_stock_episodes(tmp_path: Path) -> None:
    spec = RunSpec.model_validate(PORTFOLIO)
    asyncio.run(run_spec(spec, tmp_path / "run"))
    run = load_run(tmp_path / "run")
    assert all(builder(run, None) is None for builder in SINGLE_STOCK_SECTIONS)


def test_examples_are_valid_specs() -> None:
    root = Path(__file__).resolve().parents[3] / "examples"
    specs = sorted(root.glob("single_stock*.yaml"))
    assert len(specs) == 2
    for path in specs:
        spec = RunSpec.load(path)
        assert spec.benchmark == "single_stock"
        assert len(resolve_tasks(spec.options_as(SingleStockOptions), [])) == 12
