"""Attribute every finished episode of a run folder and write the results beside it.

Writes, for each evaluation window, `RUN_DIR/attribution/<start>_<end>.json` (kept
factors, VIFs, calibration window, amount source) and `..._factor_returns.parquet`; for
each episode `episodes/<id>/attribution.parquet` (daily components and exposures, index
`date`) and, for factor-model baselines, `episodes/<id>/signal.json` (IC, rank IC, ICIR);
and `RUN_DIR/attribution_summary.parquet`, one row per attributed episode, joined to
`summary.parquet` on `episode_id` by the report (the summary's own columns are untouched).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from tradebench.agents.factor.models import MODELS
from tradebench.agents.factor.signal import evaluate_signal
from tradebench.attribution.model import build_factor_model
from tradebench.data.dataset import Dataset, load_dataset
from tradebench.errors import ConfigError, TradebenchError
from tradebench.files import write_parquet_atomic
from tradebench.metrics.attribution import (
    attribution_summary,
    decompose,
    episode_rows,
    nav_returns,
    pre_return_weights,
)
from tradebench.metrics.factor_model import FactorModel, FactorModelConfig
from tradebench.runs.executor import resolve_dataset
from tradebench.runs.records import (
    DEFAULT_INITIAL_CASH,
    EPISODES_DIR,
    METRICS_FILE,
    ORDERS_FILE,
    POSITIONS_FILE,
    SPEC_FILE,
    STEPS_FILE,
    EpisodeRecord,
    RunRecord,
)
from tradebench.runs.store import (
    read_episode_record,
    read_parquet,
    read_run_record,
    write_json,
)
from tradebench.runs.summary import episode_dirs

ATTRIBUTION_DIR = "attribution"
ATTRIBUTION_FILE = "attribution.parquet"
SIGNAL_FILE = "signal.json"
SUMMARY_FILE = "attribution_summary.parquet"
COHORTS = ("llm", "factor_model", "rule")
"""Agent cohorts: LLM agents, factor-model baselines, rule baselines."""
SIGNAL_COLUMNS = ("ic", "rank_ic", "icir", "rank_icir", "ic_days")

__all__ = [
    "ATTRIBUTION_FILE",
    "COHORTS",
    "SIGNAL_FILE",
    "SUMMARY_FILE",
    "AttributionOutcome",
    "attribute_run",
    "cohort_of",
    "resolve_run_dataset",
]


@dataclass(frozen=True)
class AttributionOutcome:
    """What `attribute_run` did."""

    summary_path: Path
    episodes: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    windows: dict[str, dict[str, Any]] = field(default_factory=dict)
    amount_source: str = ""


def resolve_run_dataset(run_dir: Path, dataset: Path | None = None) -> Path:
    """The run's dataset: `dataset`, else the spec's `dataset`, else an episode's run.json.

    Raises:
        ConfigError: none of them names a dataset folder.
    """
    if dataset is not None:
        return Path(dataset)
    spec_file = run_dir / SPEC_FILE
    if spec_file.exists():
        name = (yaml.safe_load(spec_file.read_text()) or {}).get("dataset")
        if name:
            return resolve_dataset(str(name), run_dir)
    for folder in episode_dirs(run_dir):
        run = read_run_record(folder)
        if run and run.dataset and (Path(run.dataset) / "manifest.json").exists():
            return Path(run.dataset)
    raise ConfigError(
        f"cannot tell which dataset {run_dir} used (no spec.yaml `dataset`, no run.json "
        "`dataset`); pass --dataset"
    )


def _baseline(record: EpisodeRecord, run: RunRecord | None) -> tuple[str | None, dict[str, Any]]:
    """(registered baseline name, its arguments) from episode.json, else run.json's agent."""
    if record.baseline and record.baseline.get("name"):
        return str(record.baseline["name"]), dict(record.baseline.get("args") or {})
    if run is not None and record.kind != "llm":
        return run.agent.name, dict(run.agent.args)
    return None, {}


def cohort_of(kind: str, baseline: str | None) -> str:
    """`llm`, `factor_model` (a registered model type) or `rule`."""
    if kind == "llm":
        return "llm"
    return "factor_model" if baseline in MODELS.names() else "rule"


@dataclass(frozen=True)
class _Episode:
    folder: Path
    record: EpisodeRecord
    baseline: str | None
    args: dict[str, Any]
    steps: pd.DataFrame
    window: tuple[str, str]
    initial_cash: float


def _episode(folder: Path) -> _Episode | str:
    """An attributable episode, or why it is skipped."""
    record, run = read_episode_record(folder), read_run_record(folder)
    has_metrics = (folder / METRICS_FILE).exists()
    stated = record is not None and "status" in record.model_fields_set
    status = record.status if stated else ("done" if has_metrics else "running")
    if status != "done":
        return f"status {status}"
    record = record or EpisodeRecord(
        schema_version=1, episode_id=folder.name, agent=folder.name, kind="baseline"
    )
    if record.kind == "benchmark" or record.agent == "benchmark":
        return "benchmark index (holds no positions)"
    if not (folder / STEPS_FILE).exists() or not (folder / POSITIONS_FILE).exists():
        return "no steps.parquet/positions.parquet"
    steps = read_parquet(folder / STEPS_FILE)
    if steps.empty:
        return "no steps"
    days = pd.to_datetime(steps["date"])
    if record.window is not None:
        start, end = str(record.window.start), str(record.window.end)
    elif run is not None:
        start, end = str(run.start), str(run.end)
    else:
        start, end = str(days.min().date()), str(days.max().date())
    cash = run.initial_cash if run is not None else (record.initial_cash or DEFAULT_INITIAL_CASH)
    name, args = _baseline(record, run)
    return _Episode(folder, record, name, args, steps, (start, end), float(cash))


def _costs(folder: Path, dates: pd.Series, nav_prev: np.ndarray) -> np.ndarray:
    """Trading costs of each day as a share of the previous NAV."""
    orders = read_parquet(folder / ORDERS_FILE) if (folder / ORDERS_FILE).exists() else None
    if orders is None or orders.empty:
        return np.zeros(len(dates))
    cost = pd.to_numeric(orders["cost"], errors="coerce").fillna(0.0)
    by_day = cost.groupby(pd.to_datetime(orders["date"])).sum()
    return by_day.reindex(pd.to_datetime(dates)).fillna(0.0).to_numpy() / nav_prev


def _attribute_episode(ep: _Episode, model: FactorModel, dataset: Dataset) -> pd.DataFrame:
    positions = read_parquet(ep.folder / POSITIONS_FILE)
    rows = episode_rows(model, ep.steps["date"])
    weights = pre_return_weights(
        positions, ep.steps["date"], dataset.panel.column_map, len(dataset.panel.symbols)
    )
    nav_ret = nav_returns(ep.steps["nav"], ep.initial_cash)
    nav_prev = np.concatenate([[ep.initial_cash], ep.steps["nav"].to_numpy(float)[:-1]])
    costs = _costs(ep.folder, ep.steps["date"], nav_prev)
    paid = ep.steps.get("distributions")
    income = None if paid is None else pd.to_numeric(paid, errors="coerce").fillna(0.0).to_numpy()
    return decompose(
        model, rows, weights, nav_ret, costs, None if income is None else income / nav_prev
    )


def _model_record(model: FactorModel) -> dict[str, Any]:
    fit = model.fit
    return {
        "schema_version": 1,
        "window": [str(model.dates[0]), str(model.dates[-1])],
        "calibration": list(model.calibration),
        "candidates": list(model.config.factors),
        "kept": list(model.factors),
        "vif": model.screen.vif,
        "dropped": [{"factor": f, "vif": v, "reason": r} for f, v, r in model.screen.dropped],
        "vif_threshold": model.screen.threshold,
        "vif_rows": model.screen.n_obs,
        "amount_source": model.amount_source,
        "regression_weights": f"sqrt of the {model.config.weight_days}-day mean traded amount",
        "days": len(model.dates),
        "days_fitted": int(np.isfinite(fit.intercept).sum()),
        "mean_names": float(np.mean(fit.n_names)),
        "mean_r2": float(np.nanmean(fit.r2)) if np.isfinite(fit.r2).any() else None,
        "config": asdict(model.config),
    }


def _signal(ep: _Episode, dataset: Dataset) -> dict[str, Any]:
    report = evaluate_signal(dataset, str(ep.baseline), ep.args, *ep.window)
    q = report.quality
    out = {"schema_version": 1, "model": report.model, "model_key": report.model_key}
    out["valid"] = report.valid
    return out | {
        "ic": q.ic,
        "ic_std": q.ic_std,
        "icir": q.icir,
        "rank_ic": q.rank_ic,
        "rank_ic_std": q.rank_ic_std,
        "rank_icir": q.rank_icir,
        "ic_days": q.n_days,
    }


def _summary_row(ep: _Episode, model: FactorModel, daily: pd.DataFrame) -> dict[str, Any]:
    record = ep.record
    kind = record.kind
    return {
        "episode_id": ep.folder.name,
        "agent": record.agent or ep.baseline or ep.folder.name,
        "kind": kind,
        "mode": record.mode,
        "mask": record.mask,
        "cohort": cohort_of(kind, ep.baseline),
        "baseline": ep.baseline,
        "window_start": ep.window[0],
        "window_end": ep.window[1],
        "factors": ",".join(model.factors),
        **attribution_summary(daily, model.factors),
    }


def attribute_run(
    run_dir: Path,
    dataset: Path | None = None,
    config: FactorModelConfig | None = None,
    signal: bool = True,
    on_episode: Callable[[str], None] | None = None,
) -> AttributionOutcome:
    """Attribute every finished, non-benchmark episode of `run_dir` (see module docs).

    Raises:
        ConfigError: the run folder or its dataset cannot be found.
    """
    run_dir = Path(run_dir)
    if not (run_dir / EPISODES_DIR).is_dir():
        raise ConfigError(f"{run_dir} has no episodes/ folder; pass a `tradebench run` folder")
    ds = load_dataset(resolve_run_dataset(run_dir, dataset))
    models: dict[tuple[str, str], FactorModel] = {}
    rows, skipped, done = [], {}, []
    for folder in episode_dirs(run_dir):
        ep = _episode(folder)
        if isinstance(ep, str):
            skipped[folder.name] = ep
            continue
        if ep.window not in models:
            models[ep.window] = build_factor_model(ds.panel, *ep.window, config)
        model = models[ep.window]
        daily = _attribute_episode(ep, model, ds)
        write_parquet_atomic(daily, folder / ATTRIBUTION_FILE)
        row = _summary_row(ep, model, daily)
        if signal and row["cohort"] == "factor_model":
            columns, error = _signal_columns(ep, ds)
            row |= columns
            if error is not None:
                skipped[f"{folder.name} (signal)"] = error
        rows.append(row)
        done.append(folder.name)
        if on_episode is not None:
            on_episode(folder.name)
    windows = _write_models(run_dir, models)
    summary = pd.DataFrame(rows)
    path = run_dir / SUMMARY_FILE
    write_parquet_atomic(summary, path, index=False)
    source = next(iter(models.values())).amount_source if models else ""
    return AttributionOutcome(path, tuple(done), skipped, windows, source)


def _signal_columns(ep: _Episode, ds: Dataset) -> tuple[dict[str, Any], str | None]:
    """The IC columns of a factor-model episode (and its signal.json), or why not."""
    try:
        payload = _signal(ep, ds)
    except TradebenchError as exc:
        return {}, str(exc)
    write_json(ep.folder / SIGNAL_FILE, payload)
    return {k: payload[k] for k in SIGNAL_COLUMNS}, None


def _write_models(
    run_dir: Path, models: dict[tuple[str, str], FactorModel]
) -> dict[str, dict[str, Any]]:
    out = {}
    folder = run_dir / ATTRIBUTION_DIR
    for (start, end), model in models.items():
        span = f"{start}_{end}"
        record = _model_record(model)
        write_json(folder / f"{span}.json", record)
        write_parquet_atomic(model.factor_returns(), folder / f"{span}_factor_returns.parquet")
        out[span] = record
    return out
