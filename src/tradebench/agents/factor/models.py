"""The model registry of the factor-model baselines: one config per model type.

A `ModelSpec` names an estimator, its hyperparameters and its inputs: `table` models
read one day's features per row (`fit_estimator`, `predict`), `sequence` models (the
PyTorch zoo) read `step_len` days of a feature subset (`fit_sequence_model`). Model
libraries are imported only when a model trains (the `ml` and `zoo` extras), so
importing this module stays cheap. Defaults, sources and scalings: `docs/baselines_ml.md`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tradebench.agents.factor import boosting
from tradebench.agents.factor.double_ensemble import fit_double_ensemble
from tradebench.agents.factor.fork import openmp_guard
from tradebench.agents.factor.progress import Progress, no_progress
from tradebench.agents.factor.torch_fit import fit_torch
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

QLIB_20 = (
    "RESI5", "WVMA5", "RSQR5", "KLEN", "RSQR10", "CORR5", "CORD5", "CORR10", "ROC60", "RESI10",
    "VSTD5", "RSQR60", "CORR60", "WVMA60", "STD5", "RSQR20", "CORD60", "CORD10", "CORR20", "KLOW",
)  # fmt: skip
"""The 20 Alpha158 features Qlib's sequence benchmarks select (`FilterCol` in their configs)."""
STEP_LEN = 20
"""Days per sequence (Qlib's `TSDatasetH` `step_len` in the Alpha158 sequence configs)."""

__all__ = [
    "DEEP_SCALE",
    "LGB_CSI300",
    "MODELS",
    "QLIB_20",
    "ModelSpec",
    "fit_estimator",
    "fit_sequence_model",
    "predict",
]


@dataclass(frozen=True)
class ModelSpec:
    """One model type: estimator, hyperparameters, and how its inputs are prepared."""

    name: str
    """Registered name (`lightgbm`, `ridge`, ...)."""
    estimator: str
    """`lightgbm`, `xgboost`, `catboost`, `double_ensemble`, `torch:<arch>`, or the import
    path of a scikit-learn regressor."""
    params: tuple[tuple[str, Any], ...]
    """Hyperparameters (sorted pairs, so the spec is hashable and stable)."""
    normalise: bool
    """Cross-sectionally z-score features and fill missing with 0 (models without NaN
    support)."""
    max_train_rows: int | None
    """Seeded row sample for training (None = every row)."""
    family: str = "tree"
    """`linear`, `tree`, `boosting`, `ensemble`, `neural`, `sequence`, `attention`, `graph`."""
    inputs: Literal["table", "sequence"] = "table"
    """One day's features per row, or `step_len` days of `features` (PyTorch models)."""
    features: tuple[str, ...] | None = None
    """Feature subset of a sequence model (None: all of Alpha158)."""
    step_len: int = 1
    """Days per input sequence."""

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
            "family": self.family,
            "inputs": self.inputs,
            "features": list(self.features) if self.features is not None else None,
            "step_len": self.step_len,
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
    family: str = "tree",
) -> ModelSpec:
    rows = overrides.pop("max_train_rows", max_train_rows)
    return ModelSpec(
        name=name,
        estimator=estimator,
        params=tuple(sorted({**defaults, **overrides}.items())),
        normalise=normalise,
        max_train_rows=rows,
        family=family,
    )


@MODELS.register("lightgbm")
def _lightgbm(**overrides: Any) -> ModelSpec:
    return _spec("lightgbm", "lightgbm", LGB_CSI300, overrides, normalise=False, family="boosting")


@MODELS.register("linear")
def _linear(**overrides: Any) -> ModelSpec:
    path = "sklearn.linear_model.LinearRegression"
    return _spec("linear", path, {}, overrides, normalise=True, family="linear")


@MODELS.register("ridge")
def _ridge(**overrides: Any) -> ModelSpec:
    path = "sklearn.linear_model.Ridge"
    return _spec("ridge", path, {"alpha": 1.0}, overrides, normalise=True, family="linear")


@MODELS.register("lasso")
def _lasso(**overrides: Any) -> ModelSpec:
    defaults = {"alpha": 1e-3, "max_iter": 2000}
    path = "sklearn.linear_model.Lasso"
    return _spec("lasso", path, defaults, overrides, normalise=True, family="linear")


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
    return _spec(
        "mlp",
        path,
        defaults,
        overrides,
        normalise=True,
        max_train_rows=SLOW_MODEL_ROWS,
        family="neural",
    )


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
    return _spec(
        "gbdt",
        path,
        defaults,
        overrides,
        normalise=True,
        max_train_rows=SLOW_MODEL_ROWS,
        family="boosting",
    )


XGB_CSI300 = {
    "eval_metric": "rmse",
    "colsample_bytree": 0.8879,
    "eta": 0.0421,
    "max_depth": 8,
    "subsample": 0.8789,
    "tree_method": "hist",
    "num_boost_round": 1000,
    "early_stopping_rounds": 50,
}
"""Qlib's XGBoost for Alpha158 on CSI300 (benchmarks/XGBoost; `XGBModel.fit` rounds)."""

CATBOOST_CSI300 = {
    "loss_function": "RMSE",
    "learning_rate": 0.0421,
    "subsample": 0.8789,
    "max_depth": 6,
    "max_leaves": 100,
    "grow_policy": "Lossguide",
    "bootstrap_type": "Bernoulli",
    "num_boost_round": 1000,
    "early_stopping_rounds": 50,
}
"""Qlib's CatBoost for Alpha158 on CSI300 (benchmarks/CatBoost), Bernoulli bootstrap on CPU."""

DOUBLE_ENSEMBLE_CSI300 = {
    "num_models": 3,
    "enable_sr": True,
    "enable_fs": True,
    "alpha1": 1.0,
    "alpha2": 1.0,
    "bins_sr": 10,
    "bins_fs": 5,
    "decay": 0.5,
    "sample_ratios": [0.8, 0.7, 0.6, 0.5, 0.4],
    "sub_weights": [1.0, 1.0, 1.0],
    "epochs": 28,
    **{k: v for k, v in LGB_CSI300.items() if k != "objective" and k not in LGB_TRAINING_KEYS},
    "fs_rows": 50_000,
}
"""Qlib's DoubleEnsemble for Alpha158 on CSI300 (benchmarks/DoubleEnsemble): its LightGBM
booster values are those of the LightGBM config; `fs_rows` is ours (feature selection on
a row sample)."""


@MODELS.register("xgboost")
def _xgboost(**overrides: Any) -> ModelSpec:
    return _spec("xgboost", "xgboost", XGB_CSI300, overrides, normalise=False, family="boosting")


@MODELS.register("catboost")
def _catboost(**overrides: Any) -> ModelSpec:
    defaults = CATBOOST_CSI300
    return _spec("catboost", "catboost", defaults, overrides, normalise=False, family="boosting")


@MODELS.register("double_ensemble")
def _double_ensemble(**overrides: Any) -> ModelSpec:
    return _spec(
        "double_ensemble",
        "double_ensemble",
        DOUBLE_ENSEMBLE_CSI300,
        overrides,
        normalise=False,
        family="ensemble",
    )


DEEP_SCALE = {
    "n_epochs": 10,
    "early_stop": 3,
    "rows_per_epoch": 40_000,
    "n_seeds": 3,
    "device": "auto",
}
"""How the deep models are scaled down from Qlib's configs for CPU time: at most 10 epochs
(Qlib: 100-200), patience 3, 40k training rows drawn per epoch; three seeds averaged."""

_RNN = {"hidden_size": 32, "num_layers": 2, "dropout": 0.0, "batch_size": 800}
_DEEP: dict[str, tuple[str, dict[str, Any], tuple[str, ...] | None, int]] = {
    "lstm": ("sequence", {**_RNN, "lr": 1e-3}, QLIB_20, STEP_LEN),
    "gru": ("sequence", {**_RNN, "lr": 2e-4}, QLIB_20, STEP_LEN),
    "alstm": ("attention", {**_RNN, "lr": 1e-3, "rnn_type": "GRU"}, QLIB_20, STEP_LEN),
    "transformer": (
        "attention",
        {"d_model": 32, "nhead": 2, "num_layers": 2, "dropout": 0.0, "lr": 1e-4}
        | {"batch_size": 1024, "weight_decay": 1e-3},
        QLIB_20,
        STEP_LEN,
    ),
    "tcn": (
        "sequence",
        {"n_chans": 32, "num_layers": 3, "kernel_size": 7, "dropout": 0.5, "lr": 1e-4}
        | {"batch_size": 2000},
        QLIB_20,
        STEP_LEN,
    ),
    "tabnet": (
        "attention",
        {"n_d": 16, "n_a": 16, "n_steps": 3, "n_shared": 2, "n_ind": 2, "relax": 1.3}
        | {"lr": 0.01, "batch_size": 4096},
        None,
        1,
    ),
    "gats": (
        "graph",
        {"hidden_size": 32, "num_layers": 2, "dropout": 0.7, "lr": 1e-4}
        | {"graph_days": 120, "graph_top_k": 10},
        QLIB_20,
        STEP_LEN,
    ),
}
"""Deep model -> (family, scaled defaults, features, step_len); sources in the docs."""


def _deep(name: str, **overrides: Any) -> ModelSpec:
    family, defaults, features, step_len = _DEEP[name]
    step_len = int(overrides.pop("step_len", step_len))
    if "features" in overrides:
        picked = overrides.pop("features")
        features = None if picked is None else tuple(picked)
    overrides.pop("max_train_rows", None)
    return ModelSpec(
        name=name,
        estimator=f"torch:{name}",
        params=tuple(sorted({**DEEP_SCALE, **defaults, **overrides}.items())),
        normalise=True,
        max_train_rows=None,
        family=family,
        inputs="sequence",
        features=features,
        step_len=step_len,
    )


for _name in _DEEP:
    MODELS.register(_name)(lambda _n=_name, **kw: _deep(_n, **kw))


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"the factor-model baselines need {module.split('.')[0]}: pip install 'tradebench[ml]'"
        ) from None


def _fit_lightgbm(
    spec: ModelSpec, data: tuple[np.ndarray, ...], seed: int, progress: Progress
) -> Any:
    lgb = _import("lightgbm")
    x_train, y_train, x_valid, y_valid = data
    params = spec.kwargs()
    rounds = int(params.pop("num_boost_round", 1000))
    patience = params.pop("early_stopping_rounds", None)
    params |= {"seed": seed, "deterministic": True, "force_row_wise": True, "verbosity": -1}
    train = lgb.Dataset(x_train, y_train)
    valid_sets = []

    def report(env: Any) -> None:
        progress(env.iteration + 1, rounds)

    callbacks: list[Any] = [report]
    if len(y_valid) and patience:
        valid_sets = [lgb.Dataset(x_valid, y_valid, reference=train)]
        callbacks.append(lgb.early_stopping(int(patience), verbose=False))
    booster = lgb.train(params, train, rounds, valid_sets=valid_sets, callbacks=callbacks)
    progress(rounds, rounds)
    return booster


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
    progress: Progress = no_progress,
) -> Any:
    """Train a table model on (rows, features) arrays; boosters early-stop on validation.

    Raises:
        ConfigError: the model's library is not installed, or a hyperparameter is invalid.
    """
    data = (x_train, y_train, x_valid, y_valid)
    openmp_guard()
    try:
        if spec.estimator == "lightgbm":
            return _fit_lightgbm(spec, data, seed, progress)
        if spec.estimator == "xgboost":
            return boosting.fit_xgboost(spec.kwargs(), data, seed, progress)
        if spec.estimator == "catboost":
            return boosting.fit_catboost(spec.kwargs(), data, seed, progress)
        if spec.estimator == "double_ensemble":
            _import("lightgbm")
            return fit_double_ensemble(spec.kwargs(), data, seed, progress)
        if spec.inputs != "table":
            raise ConfigError(f"model {spec.name!r} reads sequences: use fit_sequence_model")
        model = _fit_sklearn(spec, data, seed)
        progress(1, 1)
        return model
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"cannot train model {spec.name!r}: {exc}") from None
    except Exception as exc:  # the boosters' own error types (XGBoostError, CatBoostError)
        if type(exc).__module__.split(".")[0] in {"xgboost", "catboost", "lightgbm"}:
            raise ConfigError(f"cannot train model {spec.name!r}: {exc}") from None
        raise


def fit_sequence_model(
    spec: ModelSpec, data: Any, seed: int = 0, progress: Progress = no_progress
) -> Any:
    """Train a PyTorch model of the zoo on a `SequenceSet` (its seed ensemble)."""
    openmp_guard()  # PyTorch's CPU kernels run on GNU OpenMP as well
    try:
        return fit_torch(spec.estimator.split(":", 1)[1], spec.kwargs(), data, seed, progress)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"cannot train model {spec.name!r}: {exc}") from None


def predict(
    spec: ModelSpec, model: Any, x: np.ndarray, cols: np.ndarray | None = None
) -> np.ndarray:
    """Scores of (rows, features) inputs, or (rows, steps, features) for sequence models.

    `cols` are the rows' dataset columns (the graph model looks up their neighbours).
    """
    if x.shape[0] == 0:
        return np.zeros(0)
    openmp_guard()
    if spec.estimator == "lightgbm":
        out = model.predict(x, num_iteration=model.best_iteration or None)
    elif spec.estimator == "xgboost":
        out = boosting.predict_xgboost(model, x)
    elif spec.inputs == "sequence":
        out = model.predict(x, cols)
    else:
        out = model.predict(x)
    return np.asarray(out, dtype=np.float64)
