"""Write a broker episode's files: its three tables, `metrics.json` and `run.json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tradebench.files import write_parquet_atomic, write_text_atomic
from tradebench.runs.broker.engine import BacktestResult
from tradebench.runs.records import (
    METRICS_FILE,
    ORDERS_FILE,
    POSITIONS_FILE,
    RUN_FILE,
    STEPS_FILE,
    RunRecord,
)
from tradebench.runs.store import jsonable, write_json


def write_run(
    out: Path, result: BacktestResult, metrics: dict[str, Any], record: RunRecord
) -> None:
    """Write the three tables, `metrics.json` and `run.json` of a broker backtest."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(result.steps, out / STEPS_FILE, index=False)
    write_parquet_atomic(result.positions, out / POSITIONS_FILE, index=False)
    write_parquet_atomic(result.orders, out / ORDERS_FILE, index=False)
    write_text_atomic(out / METRICS_FILE, json.dumps(jsonable(metrics), indent=2) + "\n")
    write_json(out / RUN_FILE, record.model_dump(mode="json"))
