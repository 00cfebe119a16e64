"""One summary row per episode, read from the episode folders of a run.

`summarise_episodes(run_dir)` reads each `episodes/<id>/` folder (`episode.json`,
`metrics.json`, `steps.parquet`, and `run.json` when the backtest engine wrote one) into
one row of `summary.parquet`. Both the runner and the report call it, so the table has
one definition. Missing pieces are tolerated: an episode without `metrics.json` is still
listed (status `running` unless `episode.json` says otherwise) with null metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.errors import ConfigError, DataError
from tradebench.masking import MASK_LEVELS

EPISODES_DIR = "episodes"
SUMMARY_FILE = "summary.parquet"
DEFAULT_INITIAL_CASH = 1_000_000.0
"""Start capital assumed when neither `run.json` nor `episode.json` records one."""

KINDS = ("llm", "baseline", "benchmark")
STATUSES = ("done", "running", "failed")
MODES = ("memory_only", "fixed_candidate", "open_research")
"""LLM information modes, in display order (as in the run spec)."""
MASKS: tuple[str, ...] = MASK_LEVELS
"""Mask levels, in display order."""
NOT_APPLICABLE = "n/a"
"""Mode and mask of baselines and the benchmark."""

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
    "ece",
    "tool_validity_rate",
    "brier",
)
"""The metric panel's flat fields, as in `metrics.json`."""
BENCHMARK_COLUMNS = ("benchmark_total_return", "benchmark_sharpe", "benchmark_max_drawdown")
"""The panel's nested `benchmark` fields, flattened with a `benchmark_` prefix."""
META_COLUMNS = (
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
    "tokens_in",
    "tokens_out",
    "cost_usd",
)
SUMMARY_COLUMNS = META_COLUMNS + METRIC_COLUMNS + BENCHMARK_COLUMNS
"""Columns of `summary.parquet`, in order."""

__all__ = [
    "SUMMARY_COLUMNS",
    "episode_dirs",
    "initial_cash",
    "normalise_summary",
    "read_json",
    "summarise_episodes",
    "summary_row",
    "write_summary",
]


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`, or `{}` when the file does not exist."""
    if not path.exists():
        return {}
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not readable JSON ({exc}); rewrite or remove it") from exc
    if not isinstance(payload, dict):
        raise DataError(f"{path} must hold a JSON object")
    return payload


def episode_dirs(run_dir: Path) -> list[Path]:
    """The run's episode folders, sorted by id; raises when the run folder is missing."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError(
            f"run folder {run_dir} does not exist; pass the folder `tradebench run` wrote"
        )
    root = run_dir / EPISODES_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def _agent_label(agent: Any) -> str | None:
    """`"name"`, or from `{"name", "args": {"model"}}` the label `name/model`."""
    if isinstance(agent, str):
        return agent
    if not isinstance(agent, dict):
        return None
    if agent.get("label"):
        return str(agent["label"])
    name = agent.get("name")
    model = (agent.get("args") or {}).get("model")
    if name and model:
        return f"{name}/{model}"
    return str(name) if name else None


def _iso_day(value: Any) -> str | None:
    """A date as YYYY-MM-DD; None when missing; unparseable text is kept as is."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    try:
        return pd.Timestamp(value).date().isoformat()
    except (TypeError, ValueError):
        return str(value)


def _window(meta: dict[str, Any], run: dict[str, Any]) -> tuple[str | None, str | None]:
    """(start, end) from `window` ({start, end} or [start, end]) or flat keys."""
    window = meta.get("window")
    if isinstance(window, dict):
        return _iso_day(window.get("start")), _iso_day(window.get("end"))
    if isinstance(window, list | tuple) and len(window) == 2:
        return _iso_day(window[0]), _iso_day(window[1])
    start = meta.get("window_start", meta.get("start", run.get("start")))
    end = meta.get("window_end", meta.get("end", run.get("end")))
    return _iso_day(start), _iso_day(end)


def _kind(meta: dict[str, Any], agent: str | None, mode: str) -> str:
    """Explicit `kind`, else benchmark by name, llm when a mode is set, else baseline."""
    if meta.get("kind") in KINDS:
        return str(meta["kind"])
    if agent == "benchmark":
        return "benchmark"
    return "llm" if mode in MODES else "baseline"


def initial_cash(episode_dir: Path) -> float:
    """Start capital: `run.json` (rules or top level), then `episode.json`, else 1,000,000."""
    run = read_json(episode_dir / "run.json")
    meta = read_json(episode_dir / "episode.json")
    for value in (
        (run.get("rules") or {}).get("initial_cash"),
        run.get("initial_cash"),
        meta.get("initial_cash"),
    ):
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return DEFAULT_INITIAL_CASH


def _step_sums(steps_path: Path) -> dict[str, float]:
    """Step count and token and cost totals (NaN when a column is absent or all null)."""
    steps = pd.read_parquet(steps_path) if steps_path.exists() else pd.DataFrame()
    out: dict[str, float] = {"n_steps": len(steps)}
    for col in ("tokens_in", "tokens_out", "cost_usd"):
        values = pd.to_numeric(steps[col], errors="coerce") if col in steps else None
        out[col] = float(values.sum(min_count=1)) if values is not None else np.nan
    return out


def _metric_values(metrics: dict[str, Any]) -> dict[str, float]:
    bench = metrics.get("benchmark") or {}
    out = {m: metrics.get(m) for m in METRIC_COLUMNS}
    out |= {f"benchmark_{k}": bench.get(k) for k in ("total_return", "sharpe", "max_drawdown")}
    return {k: np.nan if v is None else float(v) for k, v in out.items()}


def summary_row(episode_dir: Path) -> dict[str, Any]:
    """One episode folder as a summary row (see `SUMMARY_COLUMNS`)."""
    meta = read_json(episode_dir / "episode.json")
    run = read_json(episode_dir / "run.json")
    metrics = read_json(episode_dir / "metrics.json")
    agent = _agent_label(meta.get("agent")) or _agent_label(run.get("agent"))
    mode = str(meta.get("mode") or NOT_APPLICABLE)
    start, end = _window(meta, run)
    status = meta.get("status") or ("done" if metrics else "running")
    sums = _step_sums(episode_dir / "steps.parquet")
    if isinstance(meta.get("cost_usd"), int | float):
        sums["cost_usd"] = float(meta["cost_usd"])
    return {
        "episode_id": episode_dir.name,
        "agent": agent or episode_dir.name,
        "kind": _kind(meta, agent, mode),
        "mode": mode,
        "mask": str(meta.get("mask") or NOT_APPLICABLE),
        "seed": meta.get("seed"),
        "window_start": start,
        "window_end": end,
        "status": str(status),
        **sums,
        **_metric_values(metrics),
    }


def normalise_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Give a summary table every column with stable types; missing columns become null.

    Raises:
        DataError: the table has no `episode_id` column.
    """
    if "episode_id" not in frame.columns:
        raise DataError("summary.parquet lacks `episode_id`; rebuild it with summarise_episodes")
    out = frame.reindex(columns=list(SUMMARY_COLUMNS)).copy()
    for col in ("agent", "kind", "mode", "mask", "status", "episode_id"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    out["mode"] = out["mode"].fillna(NOT_APPLICABLE).astype(str)
    out["mask"] = out["mask"].fillna(NOT_APPLICABLE).astype(str)
    out["agent"] = out["agent"].fillna(out["episode_id"]).astype(str)
    out["episode_id"] = out["episode_id"].astype(str)
    inferred = [_kind({}, a, m) for a, m in zip(out["agent"], out["mode"], strict=True)]
    out["kind"] = out["kind"].where(out["kind"].isin(KINDS), inferred).astype(str)
    out["status"] = out["status"].fillna("unknown").astype(str)
    for col in ("window_start", "window_end"):
        out[col] = [_iso_day(v) for v in out[col]]
    out["seed"] = pd.to_numeric(out["seed"], errors="coerce").astype("Int64")
    out["n_steps"] = pd.to_numeric(out["n_steps"], errors="coerce").fillna(0).astype(int)
    numeric = ("tokens_in", "tokens_out", "cost_usd", *METRIC_COLUMNS)
    for col in (*numeric, *BENCHMARK_COLUMNS):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    return out.sort_values("episode_id", kind="stable").reset_index(drop=True)


def summarise_episodes(run_dir: Path) -> pd.DataFrame:
    """The summary table of every episode folder under `run_dir/episodes/`.

    Raises:
        ConfigError: `run_dir` does not exist.
    """
    rows = [summary_row(d) for d in episode_dirs(run_dir)]
    return normalise_summary(pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)))


def write_summary(run_dir: Path) -> Path:
    """Write `run_dir/summary.parquet` from the episode folders; returns its path.

    Raises:
        ConfigError: `run_dir` does not exist.
    """
    path = Path(run_dir) / SUMMARY_FILE
    partial = path.with_suffix(".parquet.partial")
    summarise_episodes(run_dir).to_parquet(partial, index=False)
    partial.replace(path)  # atomic: a reader never sees half a file
    return path
