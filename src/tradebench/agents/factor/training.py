"""Training a factor model point-in-time: windows before an anchor, the file cache, IC.

`train_or_load` fits a registered model type on the windows that end before the anchor
(the episode's first decision day or a retraining day), on each training day's index
members, and keeps it in the file cache under a content hash of the data window, the
features, the label, the model's hyperparameters and the seed; a second call loads it.
`retrain_anchor` says which anchor's model is in use on a day under `retrain_every`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from tradebench.agents.factor.cache import (
    CachedModel,
    cache_key,
    default_cache_dir,
    load_model,
    save_model,
)
from tradebench.agents.factor.data import (
    SequenceSet,
    TrainingConfig,
    TrainingSet,
    TrainingSlice,
    build_sequence_set,
    build_training_set,
    feature_version,
    index_digest,
    training_slice,
)
from tradebench.agents.factor.models import ModelSpec, fit_estimator, fit_sequence_model, predict
from tradebench.agents.factor.progress import Progress, no_progress
from tradebench.agents.factor.torch_fit import gather
from tradebench.metrics.attribution_ic import daily_ic, signal_quality
from tradebench.view import MarketView, to_day

LABEL = "close[t+2] / close[t+1] - 1, z-scored across each day's index members"
UNIVERSE = "point-in-time index members of each training day with a tradable bar"

__all__ = ["LABEL", "UNIVERSE", "FittedModel", "retrain_anchor", "train_or_load", "training_data"]


@dataclass(frozen=True)
class FittedModel:
    """A trained model and its provenance (`meta`: windows, sizes, validation IC)."""

    spec: ModelSpec
    model: Any
    key: str
    meta: dict[str, Any]
    from_cache: bool

    def scores(self, x: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """Scores of (rows, features) inputs ((rows, steps, features) for sequence models)."""
        return predict(self.spec, self.model, x, cols)


def _quality(pred: np.ndarray, y: np.ndarray, index: pd.MultiIndex) -> dict[str, float]:
    day, days = pd.factorize(index.get_level_values("date"))
    sym, syms = pd.factorize(index.get_level_values("symbol"))
    score, label = np.full((len(days), len(syms)), np.nan), np.full((len(days), len(syms)), np.nan)
    score[day, sym] = pred
    label[day, sym] = y
    q = signal_quality(*daily_ic(score, label))
    return {"ic": q.ic, "rank_ic": q.rank_ic, "icir": q.icir}


def _sequence_scores(model: Any, data: SequenceSet, seed: int | None = None) -> np.ndarray:
    """Validation scores of a seed ensemble (or one seed), day by day."""
    out = np.zeros(len(data.y_valid))
    days = data.rc_valid[:, 0]
    for r in np.unique(days):
        rows = np.flatnonzero(days == r)
        rc = data.rc_valid[rows]
        out[rows] = model.predict(gather(data.cube, rc, data.step_len), rc[:, 1], seed)
    return out


def _valid_ic(spec: ModelSpec, model: Any, data: TrainingSet | SequenceSet) -> dict[str, Any]:
    """IC, rank IC and ICIR on the validation window (None without one); per seed for the
    deep models, with the seeds' IC spread."""
    if len(data.y_valid) == 0:
        return {"ic": None, "rank_ic": None, "icir": None}
    if isinstance(data, TrainingSet):
        return _quality(predict(spec, model, data.x_valid), data.y_valid, data.valid_index)
    per_seed = [_sequence_scores(model, data, i) for i in range(len(model.seeds))]
    mean = np.mean(per_seed, axis=0)  # the ensemble's score is the seeds' mean
    out: dict[str, Any] = _quality(mean, data.y_valid, data.valid_index)
    seeds = []
    for i, s in enumerate(model.seeds):
        q = _quality(per_seed[i], data.y_valid, data.valid_index)
        seeds.append({"seed": s, "epochs": model.epochs[i], **q})
    ics = np.array([q["ic"] for q in seeds], dtype=np.float64)
    out["seeds"] = seeds
    out["seed_ic_mean"] = float(np.nanmean(ics))
    out["seed_ic_std"] = float(np.nanstd(ics, ddof=1)) if len(ics) > 1 else 0.0
    return out


def _history(spec: ModelSpec) -> int:
    """Rows a model reads before its training window beyond the features' lookback."""
    if spec.inputs != "sequence":
        return 0
    extra = spec.step_len - 1
    if spec.estimator == "torch:gats":
        extra += int(spec.kwargs().get("graph_days", 120))
    return extra


def _build(sl: TrainingSlice, spec: ModelSpec, seed: int) -> TrainingSet | SequenceSet:
    if spec.inputs == "sequence":
        return build_sequence_set(sl, spec.features, spec.step_len)
    return build_training_set(sl, spec.normalise, spec.max_train_rows, seed)


def training_data(
    view: MarketView, anchor: Any, spec: ModelSpec, config: TrainingConfig, seed: int = 0
) -> TrainingSet | SequenceSet:
    """Exactly the rows `train_or_load` fits `spec` on for windows before `anchor`."""
    return _build(training_slice(view, anchor, config, _history(spec)), spec, seed)


def train_or_load(
    view: MarketView,
    anchor: Any,
    spec: ModelSpec,
    config: TrainingConfig,
    seed: int = 0,
    cache_dir: Path | None = None,
    progress: Progress = no_progress,
    labels: Literal["real", "shuffled"] = "real",
) -> FittedModel:
    """The model of `spec` trained on the windows before `anchor`, from cache when present.

    `labels="shuffled"` permutes the training labels within each day (a control that
    should have no skill; perf/factor_zoo.py); it is part of the cache key.

    Raises:
        ConfigError: the windows do not fit before `anchor`, or the model cannot train.
    """
    sl = training_slice(view, anchor, config, _history(spec))
    payload = {
        "features": feature_version(config.feature_set),
        "label": LABEL if labels == "real" else f"{LABEL}, shuffled within each day",
        "universe": UNIVERSE,
        "data_sha256": sl.digest,
        "model": spec.to_json(),
        "windows": sl.windows.to_json(),
        "seed": seed,
    }
    key = cache_key(payload)
    folder = cache_dir or default_cache_dir()
    cached = load_model(folder, key)
    if cached is not None:
        progress(1, 1)
        return FittedModel(spec, cached.model, key, cached.meta, from_cache=True)
    data = _build(sl, spec, seed)
    if labels == "shuffled":
        data = _shuffled(data, seed)
    if spec.inputs == "sequence":
        model = fit_sequence_model(spec, data, seed, progress)
    else:
        model = fit_estimator(
            spec, data.x_train, data.y_train, data.x_valid, data.y_valid, seed, progress
        )
    meta = {
        **payload,
        "n_train": len(data.y_train),
        "n_valid": len(data.y_valid),
        "train_index_sha256": index_digest(data.train_index),
        "valid": _valid_ic(spec, model, data),
        "vwap_source": data.vwap_source,
    }
    save_model(folder, key, CachedModel(model, meta))
    return FittedModel(spec, model, key, meta, from_cache=False)


def _shuffled(data: TrainingSet | SequenceSet, seed: int) -> TrainingSet | SequenceSet:
    """The same rows with training labels permuted among each day's rows."""
    rng = np.random.default_rng(seed + 7919)
    y = data.y_train.copy()
    days = data.train_index.get_level_values("date").to_numpy()
    order = np.argsort(days, kind="stable")
    _, starts = np.unique(days[order], return_index=True)
    for rows in np.split(order, starts[1:]):
        y[rows] = y[rng.permutation(rows)]
    return replace(data, y_train=y)


def retrain_anchor(calendar: np.ndarray, as_of: Any, first_day: Any, months: int | None) -> Any:
    """The day the model in use on `as_of` was trained for: the first trading day on or
    after `first_day` + k * `months` (the largest such day <= `as_of`).

    `calendar` is the visible calendar (days before `as_of`); `as_of` is a trading day.
    """
    first, today = to_day(first_day), to_day(as_of)
    if months is None or today <= first:
        return first
    start = pd.Timestamp(first)
    k = 0
    while (start + pd.DateOffset(months=(k + 1) * months)).to_datetime64() <= today:
        k += 1
    if k == 0:
        return first
    due = (start + pd.DateOffset(months=k * months)).to_datetime64().astype("datetime64[D]")
    pos = int(np.searchsorted(calendar, due, side="left"))
    return calendar[pos] if pos < len(calendar) else today
