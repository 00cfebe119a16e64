"""Backtest-comprehension MCQ benchmark: questions from real backtrader backtests.

Sub-packages: `build` (backtests, templates, `build_file`), `check` (the independent
checker, `check_file`), `eval` (solvers and `run_eval`) and `mine` (`run_mine`); shared here:
`config`, `records`, `bars`, `prompt_files`. The definitions of all 33 templates are in
docs/mcq.md. Exports load lazily: building needs the `mcq` extra (backtrader), while the
CLI and the rest of tradebench must import without it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BuildResult": "build.builder",
    "BuildSpec": "build.builder",
    "Skip": "build.builder",
    "build": "build.builder",
    "CheckReport": "check",
    "check_records": "check",
    "BacktestConfig": "config",
    "DataRef": "config",
    "Sizing": "config",
    "StrategySpec": "config",
    "MCQRecord": "records",
    "read_jsonl": "records",
    "write_jsonl": "records",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an export's module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
    return getattr(module, name)
