"""The model registry of the factor-model baselines: one config per model type.

A `ModelSpec` names an estimator and its hyperparameters; `fit_estimator` trains it and
`predict` scores with it. LightGBM and scikit-learn are imported only when a model is
trained (the `ml` extra), so importing this module stays cheap. Defaults and sources:
`docs/baselines_ml.md`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from tradebench.agents.factor.fork import openmp_guard
from tradebench.errors import ConfigError
from tradebench.registry import Registry

LGB_CSI300 = {
    "objective": "regression",
    "colsample_bytree": 0.8879,
    "learning_rate": 0.2,
    "subsample": 0.8789,
    "lambda_l1": 205.6999,
    "lambda_l2": 580.9768,
    "max_depth": 8,
    "num_leaves": 210,
    "num_boost_round": 1000,
    "early_stopping_rounds": 50,
}
"""Qlib's published LightGBM hyperparameters for Alpha158 on CSI300 (benchmarks/LightGBM)."""
LGB_TRAINING_KEYS = ("num_boost_round", "early_stopping_rounds")
"""Keys of the LightGBM spec that steer `lgb.train`, not the booster."""
SLOW_MODEL_ROWS = 300_000
"""Default cap on training rows (seeded sample) for the slow scikit-learn models."""

__all__ = ["LGB_CSI300", "MODELS", "ModelSpec", "fit_estimator", "predict"]


@dataclass(frozen=True)
class ModelSpec:
    """One model type: estimator, hyperparameters, and how its inputs are prepared."""

    name: str
    """Registered name (`lightgbm`, `ridge`, ...)."""
    estimator: str
    """`lightgbm`, or the import path of a scikit-learn regressor."""
    params: tuple[tuple[str, Any], ...]
    """Hyperparameters (sorted pairs, so the spec is hashable and stable)."""
    normalise: bool
    """Cross-sectionally z-score features and fill missing with 0 (models without NaN
    support)."""
    max_train_rows: int | None
    """Seeded row sample for training (None = every row)."""

    def kwargs(self) -> dict[str, Any]:
        """Hyperparameters as a dict."""
        return dict(self.params)

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (run records and the cache key)."""
        return {
            "name": self.name,
            "estimator": self.estimator,
            "params": self.kwargs(),
            "normalise": self.normalise,
            "max_train_rows": self.max_train_rows,
        }


MODELS: Registry[ModelSpec] = Registry("model")


def _spec(
    name: str,
    estimator: str,
    defaults: dict[str, Any],
    overrides: dict[str, Any],
    *,
    normalise: bool,
    max_train_rows: int | None = None,
) -> ModelSpec:
    rows = overrides.pop("max_train_rows", max_train_rows)
    return ModelSpec(
        name=name,
        estimator=estimator,
        params=tuple(sorted({**defaults, **overrides}.items())),
        normalise=normalise,
        max_train_rows=rows,
    )


@MODELS.register("lightgbm")
def _lightgbm(**overrides: Any) -> ModelSpec:
    return _spec("lightgbm", "lightgbm", LGB_CSI300, overrides, normalise=False)


@MODELS.register("linear")
def _linear(**overrides: Any) -> ModelSpec:
    path = "sklearn.linear_model.LinearRegression"
    return _spec("linear", path, {}, overrides, normalise=True)


@MODELS.register("ridge")
def _ridge(**overrides: Any) -> ModelSpec:
    path = "sklearn.linear_model.Ridge"
    return _spec("ridge", path, {"alpha": 1.0}, overrides, normalise=True)


@MODELS.register("lasso")
def _lasso(**overrides: Any) -> ModelSpec:
    defaults = {"alpha": 1e-3, "max_iter": 2000}
    return _spec("lasso", "sklearn.linear_model.Lasso", defaults, overrides, normalise=True)


@MODELS.register("mlp")
def _mlp(**overrides: Any) -> ModelSpec:
    defaults = {
        "hidden_layer_sizes": [256, 128],
        "alpha": 1e-4,
        "batch_size": 2048,
        "learning_rate_init": 1e-3,
        "max_iter": 30,
        "early_stopping": True,
        "n_iter_no_change": 5,
    }
    path = "sklearn.neural_network.MLPRegressor"
    return _spec("mlp", path, defaults, overrides, normalise=True, max_train_rows=SLOW_MODEL_ROWS)


_FOREST = {
    "n_estimators": 100,
    "max_depth": 8,
    "min_samples_leaf": 100,
    "max_features": 0.3,
    "max_samples": 0.2,
    "n_jobs": -1,
}


@MODELS.register("random_forest")
def _random_forest(**overrides: Any) -> ModelSpec:
    path = "sklearn.ensemble.RandomForestRegressor"
    return _spec(
        "random_forest", path, _FOREST, overrides, normalise=True, max_train_rows=SLOW_MODEL_ROWS
    )


@MODELS.register("extra_trees")
def _extra_trees(**overrides: Any) -> ModelSpec:
    path = "sklearn.ensemble.ExtraTreesRegressor"
    defaults = {**_FOREST, "bootstrap": True}
    return _spec(
        "extra_trees", path, defaults, overrides, normalise=True, max_train_rows=SLOW_MODEL_ROWS
    )


@MODELS.register("gbdt")
def _gbdt(**overrides: Any) -> ModelSpec:
    defaults = {
        "max_iter": 300,
        "learning_rate": 0.05,
        "max_depth": 6,
        "l2_regularization": 1.0,
        "early_stopping": True,
        "validation_fraction": 0.1,
        "n_iter_no_change": 20,
    }
    path = "sklearn.ensemble.HistGradientBoostingRegressor"
    return _spec("gbdt", path, defaults, overrides, normalise=True, max_train_rows=SLOW_MODEL_ROWS)


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"the factor-model baselines need {module.split('.')[0]}: pip install 'tradebench[ml]'"
        ) from None


def _fit_lightgbm(spec: ModelSpec, data: tuple[np.ndarray, ...], seed: int) -> Any:
    lgb = _import("lightgbm")
    x_train, y_train, x_valid, y_valid = data
    params = spec.kwargs()
    rounds = int(params.pop("num_boost_round", 1000))
    patience = params.pop("early_stopping_rounds", None)
    params |= {"seed": seed, "deterministic": True, "force_row_wise": True, "verbosity": -1}
    train = lgb.Dataset(x_train, y_train)
    valid_sets, callbacks = [], []
    if len(y_valid) and patience:
        valid_sets = [lgb.Dataset(x_valid, y_valid, reference=train)]
        callbacks = [lgb.early_stopping(int(patience), verbose=False)]
    return lgb.train(params, train, rounds, valid_sets=valid_sets, callbacks=callbacks)


def _fit_sklearn(spec: ModelSpec, data: tuple[np.ndarray, ...], seed: int) -> Any:
    module, _, cls = spec.estimator.rpartition(".")
    params = spec.kwargs()
    if "hidden_layer_sizes" in params:
        params["hidden_layer_sizes"] = tuple(params["hidden_layer_sizes"])
    model = getattr(_import(module), cls)(**params)
    if "random_state" in model.get_params():
        model.set_params(random_state=seed)
    return model.fit(data[0], data[1])


def fit_estimator(
    spec: ModelSpec,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_valid: np.ndarray,
    y_valid: np.ndarray,
    seed: int = 0,
) -> Any:
    """Train `spec` on (rows, features) arrays; LightGBM early-stops on the validation set.

    Raises:
        ConfigError: the model's library is not installed, or a hyperparameter is invalid.
    """
    data = (x_train, y_train, x_valid, y_valid)
    openmp_guard()
    try:
        if spec.estimator == "lightgbm":
            return _fit_lightgbm(spec, data, seed)
        return _fit_sklearn(spec, data, seed)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"cannot train model {spec.name!r}: {exc}") from None


def predict(spec: ModelSpec, model: Any, x: np.ndarray) -> np.ndarray:
    """Scores of (rows, features) inputs, float64."""
    if x.shape[0] == 0:
        return np.zeros(0)
    openmp_guard()
    if spec.estimator == "lightgbm":
        out = model.predict(x, num_iteration=model.best_iteration or None)
    else:
        out = model.predict(x)
    return np.asarray(out, dtype=np.float64)
