"""`alpha9`: the nine style factors as the factor models' feature set (KTD-Fin's Alpha9 as
docs/baselines_ml.md reads it), known before the open, and a baseline trained on it through
a run."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.features.tamper import tampered
from tradebench.agents.factor.cache import load_model
from tradebench.agents.factor.data import (
    TrainingConfig,
    build_training_set,
    prediction_features,
    training_slice,
)
from tradebench.benchmarks import run_spec
from tradebench.data import load_dataset
from tradebench.data.panel import Panel
from tradebench.features.style import STYLE_FACTORS
from tradebench.runs.spec import RunSpec
from tradebench.view import MarketView

DAY = "2024-07-01"


@pytest.fixture(scope="module")
def panel(cn_dataset_dir: Path) -> Panel:
    return load_dataset(cn_dataset_dir).panel


def test_alpha9_rows_are_the_style_factors_known_before_the_open(panel: Panel) -> None:
    """Momentum, reversal and the 52-week high recomputed here from T-1's adjusted closes
    back; the same values when every bar from T on is garbage."""
    view = MarketView(panel, DAY)
    got = prediction_features(view, normalise=False, feature_set="alpha9")
    assert got.shape == (len(panel.symbols), 9)
    close = view.window("adj_close", 253)
    ok = np.isfinite(close).all(axis=0) & ~view.window("suspended", 253).any(axis=0)
    assert ok.sum() > 200
    cols = np.flatnonzero(ok)
    logp = np.log(close[:, cols])
    expected = {
        "momentum": logp[-22] - logp[-253],
        "reversal": -(logp[-1] - logp[-22]),
        "high_52w": close[-1, cols] / close[-252:, cols].max(axis=0),
    }
    for name, values in expected.items():
        np.testing.assert_allclose(got[cols, STYLE_FACTORS.index(name)], values, rtol=1e-4)
    t = int(np.searchsorted(panel.dates, np.datetime64(DAY)))
    dirty = prediction_features(MarketView(tampered(panel, t), DAY), False, "alpha9")
    np.testing.assert_array_equal(np.nan_to_num(got, nan=-9.0), np.nan_to_num(dirty, nan=-9.0))


def test_alpha9_training_rows_have_nine_columns_and_alpha158_is_unchanged(panel: Panel) -> None:
    view = MarketView(panel, DAY)
    nine = TrainingConfig(train_days=60, valid_days=20, feature_set="alpha9")
    data = build_training_set(training_slice(view, DAY, nine), normalise=True)
    assert data.x_train.shape[1] == 9 and data.x_valid.shape[1] == 9
    assert np.isfinite(data.x_train).all() and np.abs(data.x_train).max() <= 3.0
    full = TrainingConfig(train_days=60, valid_days=20)
    assert build_training_set(training_slice(view, DAY, full), True).x_train.shape[1] == 158


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn")
def test_a_factor_baseline_trains_on_alpha9_in_a_run(cn_dataset_dir: Path, tmp_path: Path) -> None:
    """A ridge baseline with `feature_set: alpha9` runs its episode; its cached model is keyed
    on the alpha9 definitions and holds nine coefficients."""
    args = {"feature_set": "alpha9", "train_days": 120, "valid_days": 40, "topk": 10}
    spec = {
        "dataset": str(cn_dataset_dir),
        "windows": [{"start": DAY, "end": "2024-07-05"}],
        "agents": [
            {"name": "ridge9", "baseline": "ridge", "args": {**args, "cache_dir": str(tmp_path)}}
        ],
    }
    summary = asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
    row = pd.read_parquet(summary).set_index("agent").loc["ridge9"]
    assert row["n_steps"] == 5
    metas = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert [m["features"] for m in metas] == ["alpha9-style/1"]
    cached = load_model(tmp_path, next(tmp_path.glob("*.pkl")).stem)
    assert cached is not None and np.asarray(cached.model.coef_).size == 9
