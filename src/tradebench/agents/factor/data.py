"""Training and validation sets of the factor-model baselines, read through a view.

Everything comes from a `MarketView` at (or after) the first decision day and is cut to
the calendar strictly before that day, so training cannot see the evaluation window. The
label of row s reads closes s+1 and s+2; windows end early enough that every label's
last close is before the first decision day (`gap_days` >= the label horizon). A row is
a (day, symbol) whose symbol was an index member on that day (point-in-time membership,
`MarketView.member_window`) with a tradable bar and a label.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tradebench.errors import ConfigError
from tradebench.features import alpha9
from tradebench.features.alpha import (
    FEATURE_VERSION,
    FEATURES,
    LABEL_HORIZON,
    LOOKBACK,
    RAW_FIELDS,
    alpha_features,
    alpha_features_last,
    cs_zscore,
    forward_label,
    inputs_from_arrays,
)
from tradebench.view import MarketView, to_day

CLIP = 3.0
"""Normalised features are clipped to +-CLIP (as Qlib's robust z-score does)."""
MIN_TRAIN_DAYS = 20
FeatureSet = Literal["alpha158", "alpha9"]

__all__ = [
    "SequenceSet",
    "TrainWindows",
    "TrainingConfig",
    "TrainingSet",
    "TrainingSlice",
    "build_sequence_set",
    "build_training_set",
    "index_digest",
    "normalise_features",
    "prediction_features",
    "prediction_sequences",
    "resolve_windows",
    "training_slice",
]


class TrainingConfig(BaseModel):
    """Where the model learns: windows relative to the first decision day, or dates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    feature_set: FeatureSet = Field(
        default="alpha158",
        description="`alpha158` (Qlib's 158 features) or `alpha9` (the nine style factors, "
        "KTD-Fin's Alpha9 as docs/baselines_ml.md reads it); under alpha9 a sequence model "
        "reads all nine",
    )
    train_days: int = Field(default=750, ge=MIN_TRAIN_DAYS, description="training days")
    valid_days: int = Field(default=250, ge=0, description="validation days (0: none)")
    gap_days: int = Field(
        default=LABEL_HORIZON,
        ge=LABEL_HORIZON,
        description="days between windows and before the first decision day",
    )
    train_start: date | None = None
    train_end: date | None = None
    valid_start: date | None = None
    valid_end: date | None = None

    @model_validator(mode="after")
    def _paired(self) -> TrainingConfig:
        for a, b in (("train_start", "train_end"), ("valid_start", "valid_end")):
            if (getattr(self, a) is None) != (getattr(self, b) is None):
                raise ValueError(f"give both {a} and {b}, or neither")
        if self.valid_start is not None and self.train_start is None:
            raise ValueError("dated validation windows need dated training windows too")
        return self


def feature_lookback(feature_set: FeatureSet) -> int:
    """Input rows the last feature row of `feature_set` needs."""
    return alpha9.LOOKBACK if feature_set == "alpha9" else LOOKBACK


def feature_version(feature_set: FeatureSet) -> str:
    """The feature set's definition version (part of the model cache key)."""
    return alpha9.FEATURE_VERSION if feature_set == "alpha9" else FEATURE_VERSION


def feature_values(
    raw: dict[str, np.ndarray], feature_set: FeatureSet, features: tuple[str, ...] | None
) -> tuple[Any, np.ndarray]:
    """(Alpha158 inputs, (F, T, N) features) of raw rows; `features` picks Alpha158 names
    (alpha9 always gives its nine)."""
    inputs = inputs_from_arrays(raw)
    if feature_set == "alpha9":
        return inputs, alpha9.alpha9_features(raw)
    return inputs, alpha_features(inputs, features).values


@dataclass(frozen=True)
class TrainWindows:
    """Calendar rows (inclusive) of the windows, on the calendar before `anchor`."""

    anchor: np.datetime64
    train: tuple[int, int]
    valid: tuple[int, int] | None
    calendar: np.ndarray

    @property
    def label_end(self) -> np.datetime64:
        """The last day any training or validation label reads."""
        last = (self.valid or self.train)[1] + LABEL_HORIZON
        return self.calendar[last]

    def to_json(self) -> dict[str, Any]:
        """Dates of the windows (the cache key and run records)."""

        def span(rows: tuple[int, int] | None) -> list[str] | None:
            return None if rows is None else [str(self.calendar[r]) for r in rows]

        return {
            "first_decision_day": str(self.anchor),
            "train": span(self.train),
            "valid": span(self.valid),
            "label_end": str(self.label_end),
        }


def _dated(calendar: np.ndarray, start: date, end: date, what: str) -> tuple[int, int]:
    lo = int(np.searchsorted(calendar, to_day(start), side="left"))
    hi = int(np.searchsorted(calendar, to_day(end), side="right")) - 1
    if hi < lo:
        raise ConfigError(f"{what} window {start} .. {end} has no trading days before the run")
    return lo, hi


def _relative(n: int, config: TrainingConfig) -> tuple[tuple[int, int], tuple[int, int] | None]:
    last = n - 1 - config.gap_days
    valid = None
    if config.valid_days:
        valid = (last - config.valid_days + 1, last)
        last = valid[0] - 1 - config.gap_days
    return (max(last - config.train_days + 1, 0), last), valid


def resolve_windows(calendar: np.ndarray, anchor: Any, config: TrainingConfig) -> TrainWindows:
    """Windows on the trading calendar before `anchor` (the first decision day).

    Raises:
        ConfigError: a window is empty, too short, or its labels would read a close on or
            after the first decision day.
    """
    anchor = to_day(anchor)
    cal = calendar[calendar < anchor]
    if config.train_start is not None:
        train = _dated(cal, config.train_start, config.train_end, "training")
        valid = None
        if config.valid_start is not None:
            valid = _dated(cal, config.valid_start, config.valid_end, "validation")
    else:
        train, valid = _relative(cal.size, config)
    last = (valid or train)[1]
    if last + LABEL_HORIZON > cal.size - 1:
        raise ConfigError(
            f"training windows end too late: labels need {LABEL_HORIZON} closes after each "
            f"day, and the first decision day is {anchor}; end the windows at least "
            f"{LABEL_HORIZON} trading days before it"
        )
    if train[1] - train[0] + 1 < MIN_TRAIN_DAYS or (valid and valid[0] > valid[1]):
        raise ConfigError(
            f"not enough history before {anchor} for the training windows "
            f"({cal.size} trading days visible); shorten train_days/valid_days"
        )
    return TrainWindows(anchor=anchor, train=train, valid=valid, calendar=cal)


@dataclass(frozen=True)
class TrainingSlice:
    """The visible rows a training set is built from, and their content digest."""

    windows: TrainWindows
    first_row: int
    raw: dict[str, np.ndarray]
    members: np.ndarray
    """(rows, N) point-in-time index membership of each row's day."""
    symbols: np.ndarray
    digest: str
    feature_set: FeatureSet = "alpha158"


def training_slice(
    view: MarketView, anchor: Any, config: TrainingConfig, history: int = 0
) -> TrainingSlice:
    """Cut the view's history to the rows the windows need.

    The features' lookback is included, plus `history` more rows before the training
    window (a sequence model's earlier steps, a graph's correlation window).
    """
    windows = resolve_windows(view.calendar, anchor, config)
    first = max(windows.train[0] - (feature_lookback(config.feature_set) - 1) - history, 0)
    last = (windows.valid or windows.train)[1] + LABEL_HORIZON
    raw = {k: view.window(k)[first : last + 1] for k in RAW_FIELDS}
    members = view.member_window()[first : last + 1]
    digest = hashlib.sha256()
    digest.update(windows.calendar[first : last + 1].tobytes())
    digest.update("\0".join(map(str, view.symbols)).encode())
    digest.update(np.packbits(members).tobytes())
    for k in RAW_FIELDS:
        digest.update(np.ascontiguousarray(raw[k]).tobytes())
    return TrainingSlice(
        windows, first, raw, members, view.symbols, digest.hexdigest(), config.feature_set
    )


def normalise_features(values: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Per-day cross-sectional z-scores over `sample`, clipped to +-CLIP, missing -> 0."""
    out = np.empty(values.shape, dtype=np.float32)
    for f in range(values.shape[0]):  # one feature at a time bounds the temporaries
        z = cs_zscore(values[f].astype(np.float64), sample)
        out[f] = np.nan_to_num(np.clip(z, -CLIP, CLIP), nan=0.0)
    return out


@dataclass(frozen=True)
class TrainingSet:
    """Rows of (features, z-scored label) indexed by (`date`, `symbol`)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_valid: np.ndarray
    y_valid: np.ndarray
    train_index: pd.MultiIndex
    valid_index: pd.MultiIndex
    windows: TrainWindows
    vwap_source: str


def _rows(
    feats: np.ndarray, y: np.ndarray, sample: np.ndarray, span: tuple[int, int], sl: TrainingSlice
) -> tuple[np.ndarray, np.ndarray, pd.MultiIndex]:
    coords, index = _coords(sample, span, sl)
    r, c = coords[:, 0], coords[:, 1]
    return feats[:, r, c].T, y[r, c], index


def index_digest(index: pd.MultiIndex) -> str:
    """sha256 of a (date, symbol) row index: ties a model's metadata to its training rows."""
    days = index.get_level_values("date").to_numpy().astype("datetime64[D]")
    digest = hashlib.sha256(days.tobytes())
    digest.update("\0".join(index.get_level_values("symbol")).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class _Prepared:
    """Features, labels and the row sample of a slice (the shared first step)."""

    inputs: Any
    feats: np.ndarray
    y: np.ndarray
    sample: np.ndarray


def _prepare(
    sl: TrainingSlice, normalise: bool, features: tuple[str, ...] | None = None
) -> _Prepared:
    inputs, feats = feature_values(sl.raw, sl.feature_set, features)
    tradable = sl.raw["listed"] & ~sl.raw["suspended"]
    universe = tradable & sl.members
    if normalise:
        feats = normalise_features(feats, universe)
    label = forward_label(inputs.close, tradable)
    sample = universe & np.isfinite(label)
    y = cs_zscore(label, sample)
    sample &= np.isfinite(y)
    return _Prepared(inputs, feats, y, sample)


def build_training_set(
    sl: TrainingSlice, normalise: bool, max_rows: int | None = None, seed: int = 0
) -> TrainingSet:
    """Features, labels and index sets of the training and validation windows.

    A row is a (day, symbol) of that day's index members with a tradable bar and a label;
    labels are z-scored across each day's rows. `max_rows` keeps a seeded sample of
    training rows.
    """
    prep = _prepare(sl, normalise)
    feats, y, sample = prep.feats, prep.y, prep.sample
    x_tr, y_tr, idx_tr = _rows(feats, y, sample, sl.windows.train, sl)
    if max_rows is not None and len(y_tr) > max_rows:
        keep = np.sort(np.random.default_rng(seed).choice(len(y_tr), max_rows, replace=False))
        x_tr, y_tr, idx_tr = x_tr[keep], y_tr[keep], idx_tr[keep]
    if sl.windows.valid is None:
        x_va, y_va = np.zeros((0, feats.shape[0]), np.float32), np.zeros(0)
        idx_va = pd.MultiIndex.from_arrays([[], []], names=["date", "symbol"])
    else:
        x_va, y_va, idx_va = _rows(feats, y, sample, sl.windows.valid, sl)
    return TrainingSet(x_tr, y_tr, x_va, y_va, idx_tr, idx_va, sl.windows, prep.inputs.vwap_source)


@dataclass(frozen=True)
class SequenceSet:
    """Inputs of the PyTorch models: a normalised (rows, N, F) feature cube and row picks.

    A training row (r, c) reads the cube at rows r-step_len+1 .. r of column c, so a
    sequence only looks back; `rc_*` are slice rows and columns of the target rows.
    """

    cube: np.ndarray
    rc_train: np.ndarray
    rc_valid: np.ndarray
    y_train: np.ndarray
    y_valid: np.ndarray
    train_index: pd.MultiIndex
    valid_index: pd.MultiIndex
    windows: TrainWindows
    step_len: int
    close: np.ndarray
    """(rows, N) adjusted closes of the slice (the correlation graph reads them)."""
    train_row0: int
    """Slice row of the first training day."""
    vwap_source: str


def _coords(
    sample: np.ndarray, span: tuple[int, int], sl: TrainingSlice
) -> tuple[np.ndarray, pd.MultiIndex]:
    lo, hi = span[0] - sl.first_row, span[1] - sl.first_row
    mask = np.zeros(sample.shape, dtype=bool)
    mask[lo : hi + 1] = sample[lo : hi + 1]
    r, c = np.nonzero(mask)
    index = pd.MultiIndex.from_arrays(
        [pd.DatetimeIndex(sl.windows.calendar[r + sl.first_row]), sl.symbols[c].astype(str)],
        names=["date", "symbol"],
    )
    return np.stack([r, c], axis=1), index


def build_sequence_set(
    sl: TrainingSlice, features: tuple[str, ...] | None, step_len: int
) -> SequenceSet:
    """Normalised feature sequences of the training and validation rows (PyTorch models).

    Features are z-scored across each day's members (clipped, missing -> 0); `features`
    picks a subset by name (None: all). Rows are chosen as in `build_training_set`.
    """
    prep = _prepare(sl, normalise=False, features=features)
    universe = sl.raw["listed"] & ~sl.raw["suspended"] & sl.members
    cube = normalise_features(prep.feats, universe).transpose(1, 2, 0)
    sample = prep.sample.copy()
    sample[: max(step_len - 1, 0)] = False
    rc_tr, idx_tr = _coords(sample, sl.windows.train, sl)
    if sl.windows.valid is None:
        rc_va = np.zeros((0, 2), dtype=np.int64)
        idx_va = pd.MultiIndex.from_arrays([[], []], names=["date", "symbol"])
    else:
        rc_va, idx_va = _coords(sample, sl.windows.valid, sl)
    return SequenceSet(
        cube=np.ascontiguousarray(cube),
        rc_train=rc_tr,
        rc_valid=rc_va,
        y_train=prep.y[rc_tr[:, 0], rc_tr[:, 1]],
        y_valid=prep.y[rc_va[:, 0], rc_va[:, 1]],
        train_index=idx_tr,
        valid_index=idx_va,
        windows=sl.windows,
        step_len=step_len,
        close=prep.inputs.close,
        train_row0=sl.windows.train[0] - sl.first_row,
        vwap_source=prep.inputs.vwap_source,
    )


def prediction_sequences(
    view: MarketView,
    features: tuple[str, ...] | None,
    step_len: int,
    feature_set: FeatureSet = "alpha158",
) -> np.ndarray:
    """(N, step_len, F) normalised feature sequences known before T's open (rows T-step..T-1).

    Each row is normalised across that day's members, exactly as in training.
    """
    rows = feature_lookback(feature_set) + step_len - 1
    raw = {k: view.window(k, rows) for k in RAW_FIELDS}
    n_sym = len(view.symbols)
    names = alpha9.ALPHA9 if feature_set == "alpha9" else (features or FEATURES)
    n_feat = len(names)
    if raw["listed"].shape[0] == 0:
        return np.zeros((n_sym, step_len, n_feat), dtype=np.float32)
    _, feats = feature_values(raw, feature_set, features)
    universe = raw["listed"] & ~raw["suspended"] & view.member_window(rows)
    cube = normalise_features(feats[:, -step_len:], universe[-step_len:])
    out = np.zeros((n_sym, step_len, n_feat), dtype=np.float32)
    have = cube.shape[1]
    out[:, step_len - have :] = cube.transpose(2, 1, 0)
    return out


def prediction_features(
    view: MarketView, normalise: bool, feature_set: FeatureSet = "alpha158"
) -> np.ndarray:
    """(N, F) features known before T's open: the panel computation's row for T-1.

    Normalised features are z-scored across T-1's members, as each training day's are.
    """
    raw = {k: view.window(k, feature_lookback(feature_set)) for k in RAW_FIELDS}
    if feature_set == "alpha9":
        feats = alpha9.alpha9_features(raw)[:, -1, :]
        if feats.shape[1] == 0 or raw["listed"].shape[0] == 0:
            feats = np.full((len(alpha9.ALPHA9), len(view.symbols)), np.nan, np.float32)
    else:
        feats = alpha_features_last(inputs_from_arrays(raw))
    if normalise and raw["listed"].shape[0]:
        universe = raw["listed"][-1:] & ~raw["suspended"][-1:] & view.member_window(1)
        feats = normalise_features(feats[:, None, :], universe)[:, 0]
    return feats.T
