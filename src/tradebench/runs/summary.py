"""One summary row per episode, read from the episode folders of a run.

`summarise_episodes(run_dir)` reads each `episodes/<id>/` folder (`episode.json` as an
`EpisodeRecord`, `metrics.json`, `steps.parquet`) into one row of `summary.parquet`. The
executor and the report both call it, so the table has one definition; a benchmark can
add columns through its `summary_row`. Missing pieces are tolerated: an episode without
`metrics.json` is still listed (status `running` unless `episode.json` says otherwise)
with null metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.errors import ConfigError, DataError
from tradebench.files import write_parquet_atomic
from tradebench.masking import MASK_LEVELS
from tradebench.metrics.reliability import FAULT_COLUMNS, FAULT_COUNT_COLUMNS
from tradebench.runs.records import (
    DEFAULT_INITIAL_CASH,
    EPISODES_DIR,
    KINDS,
    METRICS_FILE,
    NOT_APPLICABLE,
    RUN_FILE,
    STATUSES,
    STEPS_FILE,
    SUMMARY_FILE,
    EpisodeRecord,
    infer_kind,
)
from tradebench.runs.store import read_episode_record, read_json, read_parquet, read_run_record

MASKS: tuple[str, ...] = MASK_LEVELS
"""Mask levels, in display order."""

METRIC_COLUMNS = (
    "total_return",
    "sharpe",
    "max_drawdown",
    "information_ratio",
    "annualized_turnover",
    "hhi",
    "cash_ratio",
    "abstention_rate",
    "parse_failure_rate",
    "fallback_steps",
    "malformed_reply_rate",
    "ece",
    "tool_validity_rate",
    "brier",
)
"""The metric panel's flat fields, as in `metrics.json`."""
BENCHMARK_COLUMNS = ("benchmark_total_return", "benchmark_sharpe", "benchmark_max_drawdown")
"""The panel's nested `benchmark` fields, flattened with a `benchmark_` prefix."""
FAULT_TOTAL_COLUMNS = FAULT_COLUMNS
"""The panel's per-episode endpoint-fault totals (faults by kind, `http_retries`,
`retry_wait_s`, `failed_attempt_s`; the step columns' names); null for baselines and for
episodes recorded before faults were. Counts are nullable integers."""
META_COLUMNS = (
    "episode_id",
    "agent",
    "kind",
    "mode",
    "mask",
    "seed",
    "window_start",
    "window_end",
    "first_day",
    "last_day",
    "status",
    "n_steps",
    "tokens_in",
    "tokens_out",
    "cost_usd",
)
SUMMARY_COLUMNS = META_COLUMNS + METRIC_COLUMNS + BENCHMARK_COLUMNS + FAULT_TOTAL_COLUMNS
"""Columns of `summary.parquet`, in order."""

RowBuilder = Callable[[EpisodeRecord, Path], dict[str, Any]]
"""A benchmark's metric columns of one episode (see `Benchmark.summary_row`)."""

__all__ = [
    "FAULT_TOTAL_COLUMNS",
    "KINDS",
    "NOT_APPLICABLE",
    "STATUSES",
    "SUMMARY_COLUMNS",
    "episode_dirs",
    "initial_cash",
    "metric_values",
    "normalise_summary",
    "ordered",
    "read_json",
    "summarise_episodes",
    "summary_row",
    "write_summary",
]


def is_backtest_folder(run_dir: Path) -> bool:
    """Whether `run_dir` is the folder `tradebench backtest` writes: one episode's tables and
    `run.json` at its top, no `episodes/`."""
    run_dir = Path(run_dir)
    return (
        not (run_dir / EPISODES_DIR).is_dir()
        and (run_dir / RUN_FILE).is_file()
        and (run_dir / STEPS_FILE).is_file()
    )


def episode_dirs(run_dir: Path) -> list[Path]:
    """The run's episode folders, sorted by id (a backtest folder is its own one episode);
    raises when the run folder is missing."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError(
            f"run folder {run_dir} does not exist; pass the folder `tradebench run` or "
            "`tradebench backtest` wrote"
        )
    if is_backtest_folder(run_dir):
        return [run_dir.resolve()]
    root = run_dir / EPISODES_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def _iso_day(value: Any) -> str | None:
    """A date as YYYY-MM-DD; None when missing; unparseable text is kept as is."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    try:
        return pd.Timestamp(value).date().isoformat()
    except (TypeError, ValueError):
        return str(value)


def ordered(values: Any, preferred: tuple[str, ...] | list[str] = ()) -> list[str]:
    """Distinct non-null values: the preferred ones first in their order, the rest sorted."""
    present = {str(v) for v in values if v is not None and not pd.isna(v)}
    head = [v for v in preferred if v in present]
    return head + sorted(present - set(head))


def initial_cash(episode_dir: Path) -> float:
    """Start capital: `run.json`, then `episode.json`, else 1,000,000."""
    run = read_run_record(episode_dir)
    record = read_episode_record(episode_dir)
    for value in (
        run.initial_cash if run else None,
        record.initial_cash if record else None,
    ):
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return DEFAULT_INITIAL_CASH


def _step_sums(steps_path: Path) -> dict[str, float]:
    """Step count and token and cost totals (NaN when a column is absent or all null)."""
    steps = read_parquet(steps_path) if steps_path.exists() else pd.DataFrame()
    out: dict[str, float] = {"n_steps": len(steps)}
    for col in ("tokens_in", "tokens_out", "cost_usd"):
        values = pd.to_numeric(steps[col], errors="coerce") if col in steps else None
        out[col] = float(values.sum(min_count=1)) if values is not None else np.nan
    return out


def metric_values(metrics: dict[str, Any]) -> dict[str, float]:
    """The panel's columns from a `metrics.json` payload (null as NaN)."""
    bench = metrics.get("benchmark") or {}
    out = {m: metrics.get(m) for m in (*METRIC_COLUMNS, *FAULT_TOTAL_COLUMNS)}
    out |= {f"benchmark_{k}": bench.get(k) for k in ("total_return", "sharpe", "max_drawdown")}
    return {k: np.nan if v is None else float(v) for k, v in out.items()}


def default_metrics(record: EpisodeRecord, folder: Path) -> dict[str, Any]:
    """The metric columns every benchmark has: the flat panel fields of `metrics.json`."""
    return metric_values(read_json(folder / METRICS_FILE))


def _unknown_record(folder: Path) -> EpisodeRecord:
    """The record of a folder without `episode.json` (its name is its id and agent)."""
    return EpisodeRecord(
        schema_version=1, episode_id=folder.name, agent=folder.name, kind="baseline"
    )


def _decision_day(record: EpisodeRecord, which: str) -> Any:
    """The first or last day the episode actually decided on (None when not recorded)."""
    days = record.extras.get("decision_days")
    return days.get(which) if isinstance(days, dict) else None


def summary_row(episode_dir: Path, metrics: RowBuilder = default_metrics) -> dict[str, Any]:
    """One episode folder as a summary row (see `SUMMARY_COLUMNS`)."""
    record = read_episode_record(episode_dir)
    known = record is not None
    record = record or _unknown_record(episode_dir)
    run = read_run_record(episode_dir)
    has_metrics = (episode_dir / METRICS_FILE).exists()
    agent = record.agent if known else (run.agent.name if run else record.agent)
    window = record.window
    start = window.start if window else (run.start if run else None)
    end = window.end if window else (run.end if run else None)
    stated = known and "status" in record.model_fields_set
    status = record.status if stated else ("done" if has_metrics else "running")
    sums = _step_sums(episode_dir / STEPS_FILE)
    if record.cost_usd is not None:
        sums["cost_usd"] = float(record.cost_usd)
    kind = record.kind if known else infer_kind(None, agent, record.mode)
    return {
        "episode_id": episode_dir.name,
        "agent": agent,
        "kind": kind,
        "mode": record.mode,
        "mask": record.mask,
        "seed": record.seed,
        "window_start": _iso_day(start),
        "window_end": _iso_day(end),
        "first_day": _iso_day(_decision_day(record, "first")),
        "last_day": _iso_day(_decision_day(record, "last")),
        "status": str(status),
        **sums,
        **metrics(record, episode_dir),
    }


def normalise_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Give a summary table every column with stable types; missing columns become null and
    a benchmark's own columns follow the common ones.

    Raises:
        DataError: the table has no `episode_id` column.
    """
    if "episode_id" not in frame.columns:
        raise DataError("summary.parquet lacks `episode_id`; rebuild it with summarise_episodes")
    extra = [c for c in frame.columns if c not in SUMMARY_COLUMNS]  # a benchmark's own
    out = frame.reindex(columns=[*SUMMARY_COLUMNS, *extra]).copy()
    for col in ("agent", "kind", "mode", "mask", "status", "episode_id"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    out["mode"] = out["mode"].fillna(NOT_APPLICABLE).astype(str)
    out["mask"] = out["mask"].fillna(NOT_APPLICABLE).astype(str)
    out["agent"] = out["agent"].fillna(out["episode_id"]).astype(str)
    out["episode_id"] = out["episode_id"].astype(str)
    inferred = [infer_kind(None, a, m) for a, m in zip(out["agent"], out["mode"], strict=True)]
    out["kind"] = out["kind"].where(out["kind"].isin(KINDS), inferred).astype(str)
    out["status"] = out["status"].fillna("unknown").astype(str)
    for col in ("window_start", "window_end", "first_day", "last_day"):
        out[col] = [_iso_day(v) for v in out[col]]
    out["seed"] = pd.to_numeric(out["seed"], errors="coerce").astype("Int64")
    out["n_steps"] = pd.to_numeric(out["n_steps"], errors="coerce").fillna(0).astype(int)
    numeric = ("tokens_in", "tokens_out", "cost_usd", *METRIC_COLUMNS)
    seconds = [c for c in FAULT_TOTAL_COLUMNS if c not in FAULT_COUNT_COLUMNS]
    for col in (*numeric, *BENCHMARK_COLUMNS, *seconds):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    for col in FAULT_COUNT_COLUMNS:
        out[col] = pd.to_numeric(out[col], errors="coerce").round().astype("Int64")
    return out.sort_values("episode_id", kind="stable").reset_index(drop=True)


def summarise_episodes(run_dir: Path, metrics: RowBuilder = default_metrics) -> pd.DataFrame:
    """The summary table of every episode folder under `run_dir/episodes/`.

    Raises:
        ConfigError: `run_dir` does not exist.
    """
    rows = [summary_row(d, metrics) for d in episode_dirs(run_dir)]
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    return normalise_summary(frame)


def write_summary(run_dir: Path, metrics: RowBuilder = default_metrics) -> Path:
    """Write `run_dir/summary.parquet` from the episode folders; returns its path.

    Raises:
        ConfigError: `run_dir` does not exist.
    """
    path = Path(run_dir) / SUMMARY_FILE
    write_parquet_atomic(summarise_episodes(run_dir, metrics), path, index=False)
    return path
