"""One summary row per episode, read from the episode folders of a run.

`summarise_episodes(run_dir)` reads each `episodes/<id>/` folder into one row of
`summary.parquet`: the harness's common columns (`COMMON_COLUMNS`, from `episode.json` and
the progress journal, which every benchmark writes) followed by the columns the benchmark
declares (`Benchmark.summary_columns`, filled by its `summary_row`). A benchmark that
trades through the broker declares `BROKER_COLUMNS`: the harness fills their decision days,
tokens and cost (`step_columns`, from `episode.json` and `steps.parquet`), its
`summary_row` the metric panel of `metrics.json` (`default_metrics`). The executor and the
report both call it, so the table has one definition. Missing pieces are tolerated: an
episode without `metrics.json` is still listed (status `running` unless `episode.json`
says otherwise) with null metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.errors import ConfigError, DataError
from tradebench.files import write_parquet_atomic
from tradebench.masking import mask_levels
from tradebench.metrics.reliability import FAULT_COLUMNS, FAULT_COUNT_COLUMNS
from tradebench.runs.journal import completed_steps
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
COMMON_COLUMNS = (
    "episode_id",
    "agent",
    "kind",
    "mode",
    "mask",
    "seed",
    "window_start",
    "window_end",
    "status",
    "n_steps",
)
"""The harness's columns, which every benchmark's summary starts with. `n_steps` is a
finished episode's record's step count, else the journal's completed steps (`step_count`)."""
STEP_SUM_COLUMNS = ("first_day", "last_day", "tokens_in", "tokens_out", "cost_usd")
"""A broker episode's decision days (`episode.json`) and token and cost totals
(`steps.parquet`)."""
BROKER_COLUMNS = STEP_SUM_COLUMNS + METRIC_COLUMNS + BENCHMARK_COLUMNS + FAULT_TOTAL_COLUMNS
"""The columns a benchmark that trades through the broker declares (`step_columns` and
`default_metrics` fill them)."""
SUMMARY_COLUMNS = COMMON_COLUMNS + BROKER_COLUMNS
"""Columns of a broker benchmark's `summary.parquet`, in order (and of folders written
before benchmarks declared their columns, such as a `tradebench backtest` folder)."""

RowBuilder = Callable[[EpisodeRecord, Path], dict[str, Any]]
"""A benchmark's metric columns of one episode (see `Benchmark.summary_row`)."""

__all__ = [
    "BROKER_COLUMNS",
    "COMMON_COLUMNS",
    "FAULT_TOTAL_COLUMNS",
    "KINDS",
    "NOT_APPLICABLE",
    "STATUSES",
    "SUMMARY_COLUMNS",
    "episode_dirs",
    "initial_cash",
    "mask_order",
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


def mask_order() -> tuple[str, ...]:
    """Mask levels in display order (the mask table's)."""
    return mask_levels()


def _step_sums(steps_path: Path) -> dict[str, float]:
    """Token and cost totals of a steps table (NaN when a column is absent or all null)."""
    steps = read_parquet(steps_path) if steps_path.exists() else pd.DataFrame()
    out: dict[str, float] = {}
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
    """The metric panel's columns of one episode (`metrics.json`): what a broker
    benchmark's `summary_row` returns beside its own columns."""
    return metric_values(read_json(folder / METRICS_FILE))


def step_columns(record: EpisodeRecord, folder: Path) -> dict[str, Any]:
    """The `STEP_SUM_COLUMNS` of one episode, which the harness fills for a benchmark that
    declares them: its decision days (`episode.json`) and the token and cost totals of
    `steps.parquet` (the record's cost when it has one)."""
    sums: dict[str, Any] = _step_sums(folder / STEPS_FILE)
    if record.cost_usd is not None:
        sums["cost_usd"] = float(record.cost_usd)
    days = {
        "first_day": _iso_day(_decision_day(record, "first")),
        "last_day": _iso_day(_decision_day(record, "last")),
    }
    return days | sums


def step_count(record: EpisodeRecord | None, folder: Path) -> int:
    """Steps an episode completed: a finished episode's record's count, else its journal's
    completed steps (a running or killed episode), else the rows of `steps.parquet`
    (folders written before records counted steps, and `tradebench backtest` folders,
    which keep no journal)."""
    if record is not None and record.status == "done" and record.n_steps is not None:
        return int(record.n_steps)
    journal = completed_steps(folder)
    if journal or not (folder / STEPS_FILE).exists():
        return journal
    return len(read_parquet(folder / STEPS_FILE))


def _unknown_record(folder: Path) -> EpisodeRecord:
    """The record of a folder without `episode.json` (its name is its id and agent)."""
    return EpisodeRecord(
        schema_version=1, episode_id=folder.name, agent=folder.name, kind="baseline"
    )


def _decision_day(record: EpisodeRecord, which: str) -> Any:
    """The first or last day the episode actually decided on (None when not recorded)."""
    days = record.extras.get("decision_days")
    return days.get(which) if isinstance(days, dict) else None


def summary_row(
    episode_dir: Path,
    metrics: RowBuilder = default_metrics,
    columns: Sequence[str] = SUMMARY_COLUMNS,
) -> dict[str, Any]:
    """One episode folder as a summary row: `COMMON_COLUMNS`, the `STEP_SUM_COLUMNS` when
    `columns` has them, then what `metrics` (the benchmark's `summary_row`) returns."""
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
    kind = record.kind if known else infer_kind(None, agent, record.mode)
    broker = any(c in columns for c in STEP_SUM_COLUMNS)
    return {
        "episode_id": episode_dir.name,
        "agent": agent,
        "kind": kind,
        "mode": record.mode,
        "mask": record.mask,
        "seed": record.seed,
        "window_start": _iso_day(start),
        "window_end": _iso_day(end),
        "status": str(status),
        "n_steps": step_count(record if known else None, episode_dir),
        **(step_columns(record, episode_dir) if broker else {}),
        **metrics(record, episode_dir),
    }


def normalise_summary(
    frame: pd.DataFrame, columns: Sequence[str] = SUMMARY_COLUMNS
) -> pd.DataFrame:
    """Give a summary table `columns` (the common ones and a benchmark's declared ones) with
    stable types; a missing one becomes null, and any other column of the table follows
    them.

    Raises:
        DataError: the table has no `episode_id` column.
    """
    if "episode_id" not in frame.columns:
        raise DataError("summary.parquet lacks `episode_id`; rebuild it with summarise_episodes")
    head = [*COMMON_COLUMNS, *(c for c in columns if c not in COMMON_COLUMNS)]
    extra = [c for c in frame.columns if c not in head]  # returned but not declared
    out = frame.reindex(columns=[*head, *extra]).copy()
    for col in ("agent", "kind", "mode", "mask", "status", "episode_id"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    out["mode"] = out["mode"].fillna(NOT_APPLICABLE).astype(str)
    out["mask"] = out["mask"].fillna(NOT_APPLICABLE).astype(str)
    out["agent"] = out["agent"].fillna(out["episode_id"]).astype(str)
    out["episode_id"] = out["episode_id"].astype(str)
    inferred = [infer_kind(None, a, m) for a, m in zip(out["agent"], out["mode"], strict=True)]
    out["kind"] = out["kind"].where(out["kind"].isin(KINDS), inferred).astype(str)
    out["status"] = out["status"].fillna("unknown").astype(str)
    days = ("window_start", "window_end", "first_day", "last_day")
    for col in [c for c in days if c in out]:
        out[col] = [_iso_day(v) for v in out[col]]
    out["seed"] = pd.to_numeric(out["seed"], errors="coerce").astype("Int64")
    out["n_steps"] = pd.to_numeric(out["n_steps"], errors="coerce").fillna(0).astype(int)
    numeric = ("tokens_in", "tokens_out", "cost_usd", *METRIC_COLUMNS)
    seconds = [c for c in FAULT_TOTAL_COLUMNS if c not in FAULT_COUNT_COLUMNS]
    for col in [c for c in (*numeric, *BENCHMARK_COLUMNS, *seconds) if c in out]:
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    for col in [c for c in FAULT_COUNT_COLUMNS if c in out]:
        out[col] = pd.to_numeric(out[col], errors="coerce").round().astype("Int64")
    return out.sort_values("episode_id", kind="stable").reset_index(drop=True)


def summarise_episodes(
    run_dir: Path,
    metrics: RowBuilder = default_metrics,
    columns: Sequence[str] = SUMMARY_COLUMNS,
) -> pd.DataFrame:
    """The summary table of every episode folder under `run_dir/episodes/`: `columns` (the
    common ones and those the benchmark declares), each episode's filled by `metrics`.

    Raises:
        ConfigError: `run_dir` does not exist.
    """
    rows = [summary_row(d, metrics, columns) for d in episode_dirs(run_dir)]
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(columns))
    return normalise_summary(frame, columns)


def write_summary(
    run_dir: Path,
    metrics: RowBuilder = default_metrics,
    columns: Sequence[str] = SUMMARY_COLUMNS,
) -> Path:
    """Write `run_dir/summary.parquet` from the episode folders; returns its path.

    Raises:
        ConfigError: `run_dir` does not exist.
    """
    path = Path(run_dir) / SUMMARY_FILE
    write_parquet_atomic(summarise_episodes(run_dir, metrics, columns), path, index=False)
    return path


def benchmark_columns(benchmark: Any) -> tuple[str, ...]:
    """The summary columns of a benchmark's runs: `COMMON_COLUMNS` and the columns it
    declares (`summary_columns`; none declared: only what its `summary_row` returns)."""
    declared = tuple(getattr(benchmark, "summary_columns", ()) or ())
    return COMMON_COLUMNS + tuple(c for c in declared if c not in COMMON_COLUMNS)
