"""Load what the report needs from a run folder: spec, summary, steps and orders.

Only the run folder is read, never the dataset. `summary.parquet` is used when present
(the executor writes it); otherwise the summary is computed from the episode folders.
An episode's masked trace and its full tables are read on demand (`read_trace`,
`read_episode_tables`) by the sections that need them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tradebench.errors import ConfigError, DataError
from tradebench.runs.records import (
    EPISODES_DIR,
    ORDERS_FILE,
    POSITIONS_FILE,
    SPEC_FILE,
    STEPS_FILE,
    SUMMARY_FILE,
    episode_folder,
)
from tradebench.runs.store import read_parquet, read_run_record, read_table
from tradebench.runs.summary import (
    SUMMARY_COLUMNS,
    RowBuilder,
    default_metrics,
    episode_dirs,
    initial_cash,
    is_backtest_folder,
    normalise_summary,
    summarise_episodes,
)
from tradebench.runs.trace import trace_lines

STEP_COLUMNS = (
    "date",
    "nav",
    "benchmark_close",
    "n_orders",
    "retries",
    "attempts",
    "fallback",
    "parse_failures",
    "http_retries",
    "retry_wait_s",
)
"""Step columns the report reads (null where a benchmark does not write one: `retries`
is the broker engine's submission retries, `attempts` the single-stock replies asked for)."""
ORDER_COLUMNS = ("date", "symbol", "side", "confidence", "reason", "status", "reject_code")
"""Order columns the report reads (plus `stock_id_sent` when present)."""


@dataclass(frozen=True)
class RunData:
    """A run folder as the report sections see it (read-only by convention)."""

    run_dir: Path
    """The run folder."""
    name: str
    """Run name: the spec's `name`, else the folder name."""
    spec: dict[str, Any]
    """The resolved run spec (`{}` when `spec.yaml` is absent)."""
    summary: pd.DataFrame
    """One row per episode: `runs.summary.COMMON_COLUMNS` and the benchmark's own."""
    steps: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """Episode id -> steps (`STEP_COLUMNS`, dates as timestamps)."""
    orders: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """Episode id -> orders (`ORDER_COLUMNS` and `stock_id_sent`, null when absent)."""
    initial_cash: Mapping[str, float] = field(default_factory=dict)
    """Episode id -> start capital."""

    def done(self) -> pd.DataFrame:
        """Summary rows of finished episodes."""
        return self.summary[self.summary["status"] == "done"]

    @property
    def folder_name(self) -> str:
        """The run folder's own name (never its absolute path, which differs between a
        run and its replay elsewhere)."""
        return self.run_dir.resolve().name

    def episode_dir(self, episode_id: str) -> Path:
        """The folder of one episode (a backtest folder is its own only episode)."""
        if is_backtest_folder(self.run_dir):
            return self.run_dir
        return episode_folder(self.run_dir, episode_id)


@dataclass(frozen=True)
class EpisodeTables:
    """One broker episode's full tables, as the benchmark wrote them."""

    steps: pd.DataFrame
    positions: pd.DataFrame
    orders: pd.DataFrame
    initial_cash: float
    benchmark_start: float | None
    """Index close the day before the window (`run.json`), None when not recorded."""


def read_episode_tables(run: RunData, episode_id: str) -> EpisodeTables | None:
    """Steps, positions and orders of a broker episode; None when it has no positions
    table (not a broker episode, or not finished).

    Raises:
        DataError: a table is unreadable.
    """
    folder = run.episode_dir(episode_id)
    paths = [folder / name for name in (STEPS_FILE, POSITIONS_FILE, ORDERS_FILE)]
    if not all(p.exists() for p in paths):
        return None
    steps, positions, orders = (read_parquet(p) for p in paths)
    record = read_run_record(folder)
    return EpisodeTables(
        steps=steps,
        positions=positions,
        orders=orders,
        initial_cash=run.initial_cash[episode_id],
        benchmark_start=record.benchmark_start if record else None,
    )


def read_trace(run: RunData, episode_id: str) -> list[dict[str, Any]] | None:
    """The episode's masked trace, one object per step in step order; None without a
    trace (a rule agent, or a folder written without one). A done episode keeps it as
    `trace.jsonl.zst`; folders from before that, and running episodes, as `trace.jsonl`.

    Raises:
        DataError: a line is not a JSON object, or the compressed file is unreadable.
    """
    lines = trace_lines(run.episode_dir(episode_id))
    if lines is None:
        return None
    return sorted(lines, key=lambda t: int(t.get("step", 0)))


def read_spec(run_dir: Path) -> dict[str, Any]:
    """The resolved spec from `spec.yaml`, `{}` when absent."""
    path = run_dir / SPEC_FILE
    if not path.exists():
        return {}
    try:
        spec = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise DataError(f"{path} is not valid YAML ({exc}); fix or remove it") from exc
    return spec if isinstance(spec, dict) else {}


def read_summary(
    run_dir: Path,
    columns: Sequence[str] = SUMMARY_COLUMNS,
    metrics: RowBuilder = default_metrics,
) -> pd.DataFrame:
    """`summary.parquet` when present, else the summary computed from the episodes (their
    rows by `metrics`), with `columns` (the benchmark's)."""
    path = run_dir / SUMMARY_FILE
    if path.exists():
        return normalise_summary(read_parquet(path), columns)
    return summarise_episodes(run_dir, metrics, columns)


def load_run(
    run_dir: Path,
    columns: Sequence[str] = SUMMARY_COLUMNS,
    metrics: RowBuilder = default_metrics,
) -> RunData:
    """Read a run folder for reporting; `columns` and `metrics` are its benchmark's summary
    columns and row builder (by default a broker benchmark's).

    Raises:
        ConfigError: the folder does not exist or holds no episodes.
    """
    run_dir = Path(run_dir)
    dirs = episode_dirs(run_dir)
    summary = read_summary(run_dir, columns, metrics)
    if summary.empty:
        raise ConfigError(
            f"run folder {run_dir} has no episodes (no {EPISODES_DIR}/<id>/ folders and no "
            f"rows in {SUMMARY_FILE}); run `tradebench run` or `tradebench backtest` first, "
            "or pass another folder"
        )
    spec = read_spec(run_dir)
    by_id = {d.name: d for d in dirs}
    ids = [i for i in summary["episode_id"] if i in by_id]
    return RunData(
        run_dir=run_dir,
        name=str(spec.get("name") or run_dir.resolve().name),
        spec=spec,
        summary=summary,
        steps={i: read_table(by_id[i] / STEPS_FILE, STEP_COLUMNS) for i in ids},
        orders={
            i: read_table(by_id[i] / ORDERS_FILE, (*ORDER_COLUMNS, "stock_id_sent")) for i in ids
        },
        initial_cash={i: initial_cash(by_id[i]) for i in ids},
    )
