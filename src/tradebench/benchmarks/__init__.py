"""Benchmarks: one folder each, registered by name in `entry.py`, one line each.

A benchmark implements `runs.protocol.Benchmark` (options, grid, one episode, summary
columns, report sections); the harness in `runs/` runs any registered one. Entries are
`module:attribute` paths, imported when a spec names them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = ("BENCHMARKS", "get_benchmark", "run_spec", "build_report")
"""Names re-exported from `tradebench.benchmarks.entry`, loaded on first use: a benchmark's
own modules (the MCQ builder and checker) import without the harness, report and plotly."""

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Load an entry point from `tradebench.benchmarks.entry` on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.entry"), name)
