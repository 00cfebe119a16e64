"""The base pool's backtests in worker processes: the same file, every backtest in a worker.

`mcq build --all-templates` runs its 14 backtrader backtests in forked workers
(`BacktestPool`). The oracle for every log is backtrader run in the test's own process on
the same bars; the oracle for a file is the same command with `--workers 1`.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tradebench.benchmarks.mcq.build.backtest import run_backtest
from tradebench.benchmarks.mcq.build.builder import (
    BacktestCache,
    BuildSpec,
    build,
    strategy_config,
)
from tradebench.benchmarks.mcq.build.pool import BacktestPool
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.records import read_jsonl
from tradebench.cli import app

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the workers are forked on Linux only"
)


def _same_log(got, want) -> None:
    assert got.config == want.config
    assert got.bars is want.bars
    for name in ("snapshots", "fills", "trades", "refusals"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)


def test_cli_file_with_workers_is_the_file_without(tmp_path: Path, aapl) -> None:
    ref, _ = aapl
    args = ["mcq", "build", "--bars", ref.path, "--symbol", "AAPL", "--all-templates"]
    args += ["--seed", "7", "--start", "2020-01-01", "--end", "2024-01-01"]
    files = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.jsonl"
        done = CliRunner().invoke(app, [*args, "--workers", str(workers), "-o", str(out)])
        assert done.exit_code == 0, done.output
        assert "from 14 backtests" in done.output
        files[workers] = out.read_bytes()
    assert files[2] == files[1]
    report = check_records(read_jsonl(tmp_path / "w2.jsonl"))
    assert not report.failures and len(report.verdicts) > 100


def test_every_backtest_of_the_base_pool_runs_in_a_worker(aapl) -> None:
    ref, bars = aapl
    cache = BacktestCache(bars)
    with BacktestPool(2) as pool:
        assert len(pool.pids) == 2 and os.getpid() not in pool.pids
        result = build(BuildSpec(data=ref, seed=3), bars, cache=cache, pool=pool)
    alternatives = {r.alternative.key() for r in result.records if r.alternative is not None}
    assert alternatives and alternatives <= set(cache.logs)
    assert cache.on_demand == 0  # none left for the attempts to run themselves
    assert result.backtests == len(cache.logs) > len(BuildSpec(data=ref).strategies)
    assert pool.fallbacks == 0


def test_worker_logs_equal_backtrader_in_this_process(aapl) -> None:
    ref, bars = aapl
    spec = BuildSpec(data=ref, seed=11)
    configs = [strategy_config(spec, name) for name in spec.strategies]
    with BacktestPool(2) as pool:
        logs = pool.run_all(bars, configs)
    for config, got in zip(configs, logs, strict=True):
        _same_log(got, run_backtest(bars, config))


def test_a_killed_worker_loses_no_backtest(aapl, caplog: pytest.LogCaptureFixture) -> None:
    ref, bars = aapl
    spec = BuildSpec(data=ref, seed=5)
    configs = [strategy_config(spec, name) for name in spec.strategies]
    with BacktestPool(2) as pool, caplog.at_level(logging.WARNING):
        os.kill(pool.pids[0], signal.SIGKILL)
        time.sleep(0.2)  # let the executor see the death
        logs = pool.run_all(bars, configs)
    assert pool.fallbacks > 0
    assert "a backtest worker died" in caplog.text
    for config, got in zip(configs, logs, strict=True):
        _same_log(got, run_backtest(bars, config))
