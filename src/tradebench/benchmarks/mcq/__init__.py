"""Backtest-comprehension MCQ benchmark: questions from real backtrader backtests.

Build with `build` (or `service.build_file`), verify with `checker.check_records`; the
definitions of all 33 templates are in docs/mcq.md.
"""

from __future__ import annotations

from tradebench.benchmarks.mcq.builder import BuildResult, BuildSpec, Skip, build
from tradebench.benchmarks.mcq.checker import CheckReport, check_records
from tradebench.benchmarks.mcq.config import BacktestConfig, DataRef, Sizing, StrategySpec
from tradebench.benchmarks.mcq.records import MCQRecord, read_jsonl, write_jsonl

__all__ = [
    "BacktestConfig",
    "BuildResult",
    "BuildSpec",
    "CheckReport",
    "DataRef",
    "MCQRecord",
    "Sizing",
    "Skip",
    "StrategySpec",
    "build",
    "check_records",
    "read_jsonl",
    "write_jsonl",
]
