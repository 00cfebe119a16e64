"""Factor-model baselines: the model registry, leak-free training sets, top-k dropout, cache.

Only the tests that train a model need LightGBM or scikit-learn (the `ml` extra); they
skip one by one when it is absent, the registry, training-set and dropout tests always run.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.features.tamper import tampered
from tradebench.agents.factor.agent import FACTOR_MODELS, build_ml_agent, topk_dropout
from tradebench.agents.factor.data import TrainingConfig, build_training_set, training_slice
from tradebench.agents.factor.models import LGB_CSI300, MODELS, fit_estimator, predict
from tradebench.agents.factor.training import train_or_load
from tradebench.agents.protocol import AGENTS
from tradebench.data import load_dataset
from tradebench.data.panel import Panel
from tradebench.errors import ConfigError
from tradebench.features.alpha import LABEL_HORIZON
from tradebench.view import MarketView


def needs(module: str) -> pytest.MarkDecorator:
    """Skip a test when `module` (from the `ml` extra) is not installed."""
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"needs {module}, from the ml extra: pip install 'tradebench[ml]'",
    )


def _library(model: str) -> str:
    """Top-level package that trains a registered table model type."""
    estimator = MODELS.build(model)[0].estimator.split(".")[0]
    return "lightgbm" if estimator == "double_ensemble" else estimator


TABLE_MODELS = sorted(n for n in MODELS.names() if MODELS.build(n)[0].inputs == "table")


SMALL = {
    "lightgbm": {"num_boost_round": 20, "num_leaves": 8, "lambda_l1": 0.0, "lambda_l2": 0.0},
    "mlp": {"hidden_layer_sizes": [16], "max_iter": 20, "batch_size": 64},
    "random_forest": {"n_estimators": 10, "min_samples_leaf": 5, "max_samples": None},
    "extra_trees": {"n_estimators": 10, "min_samples_leaf": 5, "max_samples": None},
    "gbdt": {"max_iter": 30, "early_stopping": False},
    "xgboost": {"num_boost_round": 60, "max_depth": 4, "eta": 0.1},
    "catboost": {"num_boost_round": 60, "learning_rate": 0.1},
    "double_ensemble": {"epochs": 20, "num_leaves": 8, "lambda_l1": 0.0, "lambda_l2": 0.0}
    | {"learning_rate": 0.1, "fs_rows": 500},
}
ANCHOR = "2024-07-01"
WINDOWS = TrainingConfig(train_days=120, valid_days=40)


def test_eighteen_model_types_each_an_agent() -> None:
    assert len(FACTOR_MODELS) >= 18
    expected = {"lightgbm", "linear", "ridge", "lasso", "mlp", "random_forest", "extra_trees"}
    expected |= {"gbdt", "xgboost", "catboost", "double_ensemble", "lstm", "gru", "alstm"}
    expected |= {"transformer", "tcn", "tabnet", "gats"}
    assert expected <= set(FACTOR_MODELS)
    for name in FACTOR_MODELS:
        agent, spec = AGENTS.build(name, topk=10, n_drop=2, lot_size=100)
        assert agent.spec.name == name and spec.args["topk"] == 10


def test_lightgbm_defaults_are_qlibs_csi300_config() -> None:
    spec, _ = MODELS.build("lightgbm")
    params = spec.kwargs()
    for key, value in LGB_CSI300.items():
        assert params[key] == value
    assert params["learning_rate"] == 0.2 and params["num_leaves"] == 210


@pytest.mark.filterwarnings("ignore:Stochastic Optimizer")
@pytest.mark.parametrize("name", [pytest.param(n, marks=needs(_library(n))) for n in TABLE_MODELS])
def test_every_model_learns_a_planted_signal(name: str) -> None:
    rng = np.random.RandomState(1337)
    x = rng.normal(size=(1500, 12)).astype(np.float32)
    y = x[:, 0] - 0.5 * x[:, 1] + 0.5 * rng.normal(size=1500)
    spec, _ = MODELS.build(name, **SMALL.get(name, {}))
    model = fit_estimator(spec, x[:1000], y[:1000], x[1000:1200], y[1000:1200], seed=0)
    pred = predict(spec, model, x[1200:])
    assert pred.shape == (300,) and np.isfinite(pred).all()
    assert np.corrcoef(pred, y[1200:])[0, 1] > 0.5


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        build_ml_agent("ridge", topk=0)
    with pytest.raises(ConfigError):
        AGENTS.build("lightgbm", no_such_option=1)


@pytest.fixture(scope="module")
def panel(cn_dataset_dir: Path) -> Panel:
    return load_dataset(cn_dataset_dir).panel


def test_training_never_touches_evaluation_window_labels(panel: Panel) -> None:
    """Even from a view two weeks into the evaluation, training rows and every close their
    labels read lie strictly before the first decision day."""
    later = MarketView(panel, "2024-07-15")
    data = build_training_set(training_slice(later, ANCHOR, WINDOWS), normalise=False)
    anchor = np.datetime64(ANCHOR)
    first = int(np.searchsorted(panel.dates, anchor))
    evaluation = set(pd.DatetimeIndex(panel.dates[first:]))
    for index in (data.train_index, data.valid_index):
        assert index.names == ["date", "symbol"]
        days = index.get_level_values("date").unique()
        assert evaluation.isdisjoint(days)
        rows = np.searchsorted(panel.dates, days.to_numpy().astype("datetime64[D]"))
        assert rows.max() + LABEL_HORIZON < first  # the label's last close is before T
    assert (
        data.train_index.get_level_values("date").max()
        < data.valid_index.get_level_values("date").min()
    )
    assert data.windows.label_end < anchor
    assert len(data.y_train) > 10_000 and len(data.y_valid) > 5_000
    np.testing.assert_allclose(
        pd.Series(data.y_train).groupby(data.train_index.get_level_values("date")).mean(),
        0.0,
        atol=1e-9,
    )


def test_training_data_is_unchanged_when_the_evaluation_window_is_rewritten(
    panel: Panel,
) -> None:
    t = int(np.searchsorted(panel.dates, np.datetime64(ANCHOR)))
    fake = tampered(panel, t)
    clean = training_slice(MarketView(panel, "2024-07-15"), ANCHOR, WINDOWS)
    dirty = training_slice(MarketView(fake, "2024-07-15"), ANCHOR, WINDOWS)
    assert clean.digest == dirty.digest
    moved = training_slice(MarketView(panel, "2024-07-15"), "2024-07-02", WINDOWS)
    assert moved.digest != clean.digest


def test_dated_windows_reaching_the_evaluation_are_rejected(panel: Panel) -> None:
    view = MarketView(panel, ANCHOR)
    late = TrainingConfig(train_start="2024-01-02", train_end="2024-06-27")
    with pytest.raises(ConfigError, match="end too late"):
        training_slice(view, ANCHOR, late)
    ok = TrainingConfig(train_start="2024-01-02", train_end="2024-06-26")
    assert training_slice(view, ANCHOR, ok).windows.label_end < np.datetime64(ANCHOR)
    with pytest.raises(ValueError):
        TrainingConfig(train_start="2024-01-02")


def test_topk_dropout_follows_qlib() -> None:
    scores = pd.Series({"A": 9.0, "B": 8.0, "C": 7.0, "D": 6.0, "E": 5.0, "F": 4.0, "G": 3.0})
    sell, buy = topk_dropout(scores, ["C", "F", "G"], topk=3, n_drop=2)
    assert sell == ["F", "G"] and buy == ["A", "B"]
    sell, buy = topk_dropout(scores, [], topk=3, n_drop=2)
    assert sell == [] and buy == ["A", "B", "C"]
    sell, buy = topk_dropout(scores, ["A", "B", "X"], topk=3, n_drop=1)
    assert sell == ["X"] and buy == ["C"]  # an unscored holding (left the index) goes first


@needs("sklearn")
def test_models_are_cached_by_data_config_and_windows(panel: Panel, tmp_path: Path) -> None:
    spec, _ = MODELS.build("ridge")
    view = MarketView(panel, ANCHOR)
    first = train_or_load(view, ANCHOR, spec, WINDOWS, seed=0, cache_dir=tmp_path)
    again = train_or_load(MarketView(panel, "2024-07-10"), ANCHOR, spec, WINDOWS, 0, tmp_path)
    assert not first.from_cache and again.from_cache and again.key == first.key
    assert (tmp_path / f"{first.key}.json").exists()
    other, _ = MODELS.build("ridge", alpha=10.0)
    assert train_or_load(view, ANCHOR, other, WINDOWS, 0, tmp_path).key != first.key
    assert first.meta["windows"]["label_end"] < ANCHOR
    assert first.meta["valid"]["ic"] is not None
