"""XGBoost and CatBoost regressors with Qlib's early-stopping training, on table inputs.

Both train up to `num_boost_round` rounds and stop `early_stopping_rounds` after the best
validation RMSE (Qlib's `XGBModel.fit` / `CatBoostModel.fit` defaults: 1000 and 50).
The libraries are imported on first use (the `zoo` extra).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from tradebench.agents.factor.progress import Progress, no_progress
from tradebench.errors import ConfigError

__all__ = ["fit_catboost", "fit_xgboost", "import_zoo", "predict_catboost", "predict_xgboost"]


def import_zoo(module: str) -> Any:
    """Import an optional model library, or a ConfigError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"this factor model needs {module.split('.')[0]}: pip install 'tradebench[zoo]'"
        ) from None


def _rounds(params: dict[str, Any]) -> tuple[int, int | None]:
    rounds = int(params.pop("num_boost_round", 1000))
    patience = params.pop("early_stopping_rounds", None)
    return rounds, None if patience is None else int(patience)


def fit_xgboost(
    params: dict[str, Any],
    data: tuple[np.ndarray, ...],
    seed: int,
    progress: Progress = no_progress,
) -> Any:
    """An `xgboost.Booster` trained on (x_train, y_train, x_valid, y_valid)."""
    xgb = import_zoo("xgboost")
    x_train, y_train, x_valid, y_valid = data
    params = dict(params)
    rounds, patience = _rounds(params)
    params |= {"seed": seed, "verbosity": 0, "nthread": params.get("nthread", 0)}
    train = xgb.DMatrix(x_train, label=y_train, missing=np.nan)
    evals = []
    if len(y_valid):
        evals = [(xgb.DMatrix(x_valid, label=y_valid, missing=np.nan), "valid")]

    class _Report(xgb.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            progress(epoch + 1, rounds)
            return False

    booster = xgb.train(
        params,
        train,
        num_boost_round=rounds,
        evals=evals,
        early_stopping_rounds=patience if evals else None,
        verbose_eval=False,
        callbacks=[_Report()],
    )
    progress(rounds, rounds)
    return booster


def predict_xgboost(model: Any, x: np.ndarray) -> np.ndarray:
    """Scores of the best iteration (all rounds without early stopping)."""
    xgb = import_zoo("xgboost")
    best = getattr(model, "best_iteration", None)
    limit = (0, best + 1) if best is not None else (0, 0)
    return model.predict(xgb.DMatrix(x, missing=np.nan), iteration_range=limit)


def fit_catboost(
    params: dict[str, Any],
    data: tuple[np.ndarray, ...],
    seed: int,
    progress: Progress = no_progress,
) -> Any:
    """A `catboost.CatBoostRegressor` trained with the best validation iteration kept."""
    cb = import_zoo("catboost")
    x_train, y_train, x_valid, y_valid = data
    params = dict(params)
    rounds, patience = _rounds(params)
    model = cb.CatBoostRegressor(
        iterations=rounds,
        random_seed=seed,
        verbose=False,
        allow_writing_files=False,
        **params,
    )

    class _Report:
        def after_iteration(self, info: Any) -> bool:
            progress(int(info.iteration), rounds)
            return True

    fit: dict[str, Any] = {"callbacks": [_Report()]}
    if len(y_valid):
        fit |= {"eval_set": (x_valid, y_valid), "use_best_model": True}
        if patience:
            fit["early_stopping_rounds"] = patience
    model.fit(x_train, y_train, **fit)
    progress(rounds, rounds)
    return model


def predict_catboost(model: Any, x: np.ndarray) -> np.ndarray:
    """Scores of the kept (best) iteration."""
    return model.predict(x)
