"""Backtrader backtests in worker processes, for a build that needs many of them.

A base-pool build runs 14 backtests (five strategies and the alternatives of the
comparative templates), about 0.1 s each with backtrader, one after another in one
process. `BacktestPool` runs them in forked worker processes instead, so a build uses the
cores it may use. Each worker runs the builder's own `run_backtest` on the bars and config
it is sent and sends back the log; the logs are the ones the builder's process would have
made (same code, same bars, no randomness), and a file built with workers is byte-identical
to one built without (`tests/benchmarks/mcq/test_mcq_pool.py`).

The workers are forked when the pool opens, before a progress bar starts its refresh thread
(forking a process that runs other threads can leave a lock held in the child), so open the
pool first. A worker that dies (killed, out of memory) does not lose the build: its
backtests run in the builder's process and the event is logged.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from types import TracebackType

import pandas as pd

from tradebench.benchmarks.mcq.build.backtest import BacktestLog, run_backtest
from tradebench.benchmarks.mcq.config import BacktestConfig

log = logging.getLogger(__name__)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_started: threading.Barrier | None = None
"""Set in each worker at its start: the barrier every worker reaches once (`_pid`)."""


def _remember(started: threading.Barrier) -> None:
    global _started
    _started = started


def _pid() -> int:
    """A worker's process id, once every worker has started one of these (so each runs
    on a different worker)."""
    assert _started is not None
    _started.wait(timeout=30)
    return os.getpid()


def _run_in_worker(bars: pd.DataFrame, config: BacktestConfig) -> BacktestLog:
    """A worker's task: one backtest, sent back without the bars the builder already has."""
    return replace(run_backtest(bars, config), bars=None)  # type: ignore[arg-type]


class BacktestPool:
    """Up to `workers` forked processes that run backtests; with one worker, none is
    started and every backtest runs in this process.

    Use it as a context manager: the workers start on entry and stop on exit.
    """

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("a BacktestPool needs at least one worker")
        self.workers = workers
        self.pids: tuple[int, ...] = ()
        """The workers' process ids once started (empty for a single worker)."""
        self.fallbacks = 0
        """Backtests that ran in this process because a worker died."""
        self._executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> BacktestPool:
        if self.workers > 1 and sys.platform == "linux":  # fork is safe to rely on there
            fork = multiprocessing.get_context("fork")
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=fork,
                initializer=_remember,
                initargs=(fork.Barrier(self.workers),),
            )
            # With "fork" every worker starts on the first submission: start them now.
            pids = [self._executor.submit(_pid) for _ in range(self.workers)]
            self.pids = tuple(p.result() for p in pids)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def run_all(self, bars: pd.DataFrame, configs: Sequence[BacktestConfig]) -> list[BacktestLog]:
        """The log of each config on `bars`, in order; in the workers where there are any."""
        if self._executor is None or len(configs) < 2:
            return [run_backtest(bars, config) for config in configs]
        try:
            futures = [self._executor.submit(_run_in_worker, bars, c) for c in configs]
        except BrokenProcessPool:  # a worker died earlier: no more submissions
            return self._here(bars, configs)
        logs = []
        for future in futures:
            try:
                logs.append(replace(future.result(), bars=bars))
            except BrokenProcessPool:
                logs += self._here(bars, configs[len(logs) :])
                break
        return logs

    def _here(self, bars: pd.DataFrame, configs: Sequence[BacktestConfig]) -> list[BacktestLog]:
        """Run `configs` in this process after a worker died, and say so."""
        self.fallbacks += len(configs)
        log.warning("a backtest worker died; running %d backtests in this process", len(configs))
        return [run_backtest(bars, config) for config in configs]
