"""Write and read the files of a run folder: JSON records and a broker episode's tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from tradebench.errors import DataError
from tradebench.files import write_parquet_atomic, write_text_atomic
from tradebench.runs.broker.engine import BacktestResult
from tradebench.runs.records import (
    EPISODE_FILE,
    METRICS_FILE,
    ORDERS_FILE,
    POSITIONS_FILE,
    RUN_FILE,
    STEPS_FILE,
    SUMMARY_FILE,
    EpisodeRecord,
    RunRecord,
)

RUN_FILES = (STEPS_FILE, POSITIONS_FILE, ORDERS_FILE, METRICS_FILE)


def jsonable(value: Any) -> Any:
    """A payload with NaN/inf as None and numpy scalars as Python numbers (JSON-safe)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float | np.floating):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write JSON with NaN/inf as null, keys sorted, so files are stable and portable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(jsonable(payload), indent=2, sort_keys=True) + "\n")


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`, or `{}` when the file does not exist.

    Raises:
        DataError: The file is not a readable JSON object.
    """
    if not path.exists():
        return {}
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not readable JSON ({exc}); rewrite or remove it") from exc
    if not isinstance(payload, dict):
        raise DataError(f"{path} must hold a JSON object")
    return payload


def write_episode_record(folder: Path, record: EpisodeRecord) -> None:
    """Write `episode.json`."""
    write_json(Path(folder) / EPISODE_FILE, record.model_dump(mode="json"))


def read_episode_record(folder: Path) -> EpisodeRecord | None:
    """`episode.json` of an episode folder (either version), None when absent.

    Raises:
        DataError: The file is unreadable or not an episode record.
    """
    raw = read_json(Path(folder) / EPISODE_FILE)
    if not raw:
        return None
    try:
        return EpisodeRecord.model_validate(
            {"schema_version": 1, "episode_id": Path(folder).name, **raw}
        )
    except ValueError as exc:
        raise DataError(f"{Path(folder) / EPISODE_FILE} is not an episode record: {exc}") from None


def read_run_record(folder: Path) -> RunRecord | None:
    """`run.json` of a broker episode or backtest folder, None when absent or not one."""
    raw = read_json(Path(folder) / RUN_FILE)
    if not raw:
        return None
    try:
        return RunRecord.model_validate({"schema_version": 1, **raw})
    except ValueError:
        return None


def read_parquet(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """A run folder's Parquet table.

    Raises:
        DataError: The file is truncated or not Parquet (named, with the fix).
    """
    try:
        return pd.read_parquet(path, columns=columns)
    except (OSError, ValueError, pa.ArrowException) as exc:
        summary = Path(path).name == SUMMARY_FILE
        fix = (
            "delete it: it is rebuilt from the episode folders"
            if summary
            else "delete the episode folder and rerun the same command to redo it"
        )
        raise DataError(f"{path} is not a readable Parquet table ({exc}); {fix}") from None


def read_table(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """The listed columns of a Parquet table (absent ones null, dates as timestamps); an
    empty frame when the file does not exist."""
    frame = read_parquet(path) if path.exists() else pd.DataFrame()
    out = frame.reindex(columns=list(columns))
    if "date" in out:
        out["date"] = pd.to_datetime(out["date"])
    return out.reset_index(drop=True)
