"""Write and read a run's files: steps, positions, orders (Parquet) and metrics.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.runs.backtest import BacktestResult

RUN_FILES = ("steps.parquet", "positions.parquet", "orders.parquet", "metrics.json")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float | np.floating):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write JSON with NaN/inf as null, keys sorted, so files are stable and portable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(payload), indent=2, sort_keys=True) + "\n")


def write_run(
    out: Path, result: BacktestResult, metrics: dict[str, Any], run_info: dict[str, Any]
) -> None:
    """Write the four run files plus `run.json` (agent spec, dataset, rules, window)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result.steps.to_parquet(out / "steps.parquet", index=False)
    result.positions.to_parquet(out / "positions.parquet", index=False)
    result.orders.to_parquet(out / "orders.parquet", index=False)
    (out / "metrics.json").write_text(json.dumps(_jsonable(metrics), indent=2) + "\n")
    write_json(out / "run.json", run_info)


def read_run(path: Path) -> dict[str, pd.DataFrame]:
    """Read a run folder's three tables."""
    path = Path(path)
    return {
        name: pd.read_parquet(path / f"{name}.parquet") for name in ("steps", "positions", "orders")
    }
