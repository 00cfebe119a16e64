"""Attribute every finished episode of a run folder and write the results beside it.

Writes, for each evaluation window, `RUN_DIR/attribution/<start>_<end>.json` (kept
factors, VIFs, calibration window, amount source) and `..._factor_returns.parquet`; for
each episode `episodes/<id>/attribution.parquet` (daily components and exposures, index
`date`) and, for factor-model baselines, `episodes/<id>/signal.json` (IC, rank IC, ICIR);
and `RUN_DIR/attribution_summary.parquet`, one row per attributed episode, joined to
`summary.parquet` on `episode_id` by the report (the summary's own columns are untouched).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from tradebench.agents.factor.models import MODELS
from tradebench.attribution.model import build_factor_model
from tradebench.data.dataset import Dataset, load_dataset
from tradebench.errors import ConfigError, DataError, TradebenchError
from tradebench.metrics.attribution import (
    attribution_summary,
    decompose,
    episode_rows,
    nav_returns,
    pre_return_weights,
)
from tradebench.metrics.factor_model import FactorModel, FactorModelConfig

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


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        payload = json.loads(path.read_text())
    except ValueError as exc:
        raise DataError(f"{path} is not readable JSON ({exc}); rewrite or remove it") from None
    return payload if isinstance(payload, dict) else {}


def resolve_run_dataset(run_dir: Path, dataset: Path | None = None) -> Path:
    """The run's dataset: `dataset`, else the spec's `dataset`, else an episode's run.json.

    Raises:
        ConfigError: none of them names a dataset folder.
    """
    if dataset is not None:
        return Path(dataset)
    spec_file = run_dir / "spec.yaml"
    if spec_file.exists():
        name = (yaml.safe_load(spec_file.read_text()) or {}).get("dataset")
        if name:
            from tradebench.runs.runner import resolve_dataset

            return resolve_dataset(str(name), run_dir)
    for folder in sorted((run_dir / "episodes").glob("*/")):
        name = _read_json(folder / "run.json").get("dataset")
        if name and (Path(name) / "manifest.json").exists():
            return Path(name)
    raise ConfigError(
        f"cannot tell which dataset {run_dir} used (no spec.yaml `dataset`, no run.json "
        "`dataset`); pass --dataset"
    )


def _baseline(meta: dict[str, Any], run: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(registered baseline name, its arguments) from episode.json or run.json."""
    for source in (meta.get("baseline"), run.get("agent")):
        if isinstance(source, dict) and source.get("name"):
            return str(source["name"]), dict(source.get("args") or {})
    return None, {}


def cohort_of(kind: str, baseline: str | None) -> str:
    """`llm`, `factor_model` (a registered model type) or `rule`."""
    if kind == "llm":
        return "llm"
    return "factor_model" if baseline in MODELS.names() else "rule"


@dataclass(frozen=True)
class _Episode:
    folder: Path
    meta: dict[str, Any]
    baseline: str | None
    args: dict[str, Any]
    steps: pd.DataFrame
    window: tuple[str, str]
    initial_cash: float


def _episode(folder: Path) -> _Episode | str:
    """An attributable episode, or why it is skipped."""
    meta, run = _read_json(folder / "episode.json"), _read_json(folder / "run.json")
    status = meta.get("status") or ("done" if (folder / "metrics.json").exists() else "running")
    if status != "done":
        return f"status {status}"
    if meta.get("kind") == "benchmark" or meta.get("agent") == "benchmark":
        return "benchmark index (holds no positions)"
    if not (folder / "steps.parquet").exists() or not (folder / "positions.parquet").exists():
        return "no steps.parquet/positions.parquet"
    steps = pd.read_parquet(folder / "steps.parquet")
    if steps.empty:
        return "no steps"
    window = meta.get("window") or {}
    days = pd.to_datetime(steps["date"])
    start = str(window.get("start") or run.get("start") or days.min().date())
    end = str(window.get("end") or run.get("end") or days.max().date())
    cash = (run.get("rules") or {}).get("initial_cash") or run.get("initial_cash") or 1e6
    name, args = _baseline(meta, run)
    return _Episode(folder, meta, name, args, steps, (start, end), float(cash))


def _costs(folder: Path, dates: pd.Series, nav_prev: np.ndarray) -> np.ndarray:
    """Trading costs of each day as a share of the previous NAV."""
    orders = (
        pd.read_parquet(folder / "orders.parquet") if (folder / "orders.parquet").exists() else None
    )
    if orders is None or orders.empty:
        return np.zeros(len(dates))
    cost = pd.to_numeric(orders["cost"], errors="coerce").fillna(0.0)
    by_day = cost.groupby(pd.to_datetime(orders["date"])).sum()
    return by_day.reindex(pd.to_datetime(dates)).fillna(0.0).to_numpy() / nav_prev


def _attribute_episode(ep: _Episode, model: FactorModel, dataset: Dataset) -> pd.DataFrame:
    positions = pd.read_parquet(ep.folder / "positions.parquet")
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
    from tradebench.agents.factor.signal import evaluate_signal

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


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    from tradebench.runs.store import write_json

    write_json(path, payload)


def _summary_row(ep: _Episode, model: FactorModel, daily: pd.DataFrame) -> dict[str, Any]:
    meta = ep.meta
    kind = str(meta.get("kind") or "baseline")
    return {
        "episode_id": ep.folder.name,
        "agent": str(meta.get("agent") or ep.baseline or ep.folder.name),
        "kind": kind,
        "mode": str(meta.get("mode") or "n/a"),
        "mask": str(meta.get("mask") or "n/a"),
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
    if not (run_dir / "episodes").is_dir():
        raise ConfigError(f"{run_dir} has no episodes/ folder; pass a `tradebench run` folder")
    ds = load_dataset(resolve_run_dataset(run_dir, dataset))
    models: dict[tuple[str, str], FactorModel] = {}
    rows, skipped, done = [], {}, []
    for folder in sorted(p for p in (run_dir / "episodes").iterdir() if p.is_dir()):
        ep = _episode(folder)
        if isinstance(ep, str):
            skipped[folder.name] = ep
            continue
        if ep.window not in models:
            models[ep.window] = build_factor_model(ds.panel, *ep.window, config)
        model = models[ep.window]
        daily = _attribute_episode(ep, model, ds)
        daily.to_parquet(folder / ATTRIBUTION_FILE)
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
    summary.to_parquet(path, index=False)
    source = next(iter(models.values())).amount_source if models else ""
    return AttributionOutcome(path, tuple(done), skipped, windows, source)


def _signal_columns(ep: _Episode, ds: Dataset) -> tuple[dict[str, Any], str | None]:
    """The IC columns of a factor-model episode (and its signal.json), or why not."""
    try:
        payload = _signal(ep, ds)
    except TradebenchError as exc:
        return {}, str(exc)
    _write_json(ep.folder / SIGNAL_FILE, payload)
    return {k: payload[k] for k in SIGNAL_COLUMNS}, None


def _write_models(
    run_dir: Path, models: dict[tuple[str, str], FactorModel]
) -> dict[str, dict[str, Any]]:
    out = {}
    folder = run_dir / ATTRIBUTION_DIR
    for (start, end), model in models.items():
        span = f"{start}_{end}"
        record = _model_record(model)
        _write_json(folder / f"{span}.json", record)
        model.factor_returns().to_parquet(folder / f"{span}_factor_returns.parquet")
        out[span] = record
    return out
