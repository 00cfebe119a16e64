"""DoubleEnsemble over LightGBM: sample re-weighting and feature selection between stages.

The method of Zhang et al. (2020, "DoubleEnsemble: A New Ensemble Method Based on Sample
Reweighting and Feature Selection for Financial Data Analysis"), as Qlib's
`DEnsembleModel` runs it on Alpha158. Sub-model k trains on weighted rows and a feature
subset chosen after sub-model k-1:

- **Sample re-weighting (SR).** Each row's loss curve over the previous sub-model's trees
  and its loss under the current ensemble are rank-normalised; h = alpha1 * (rank of the
  negated ensemble loss) + alpha2 * (rank of end-of-curve / start-of-curve loss). Rows
  are put in `bins_sr` equal-width bins of h, and a row in bin b gets weight
  1 / (decay^k * mean h of b + 0.1): hard-but-learnable rows count more, noise less.
- **Feature selection (FS).** Each feature is shuffled in turn; g = mean / std of the
  rise in the ensemble's per-row loss. Features fall in `bins_fs` equal-width bins of g,
  and from the best bin down a share `sample_ratios[i]` is drawn at random.

The ensemble scores with the `sub_weights`-weighted mean of its sub-models. Two scalings
for CPU time, both recorded in the spec: FS shuffles over a seeded sample of
`fs_rows` training rows, and only sub-models that use the shuffled feature are
re-scored (the others' scores do not change).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tradebench.agents.factor.progress import Progress, no_progress
from tradebench.errors import ConfigError

__all__ = ["DoubleEnsemble", "equal_width_bins", "fit_double_ensemble", "pct_rank"]

DE_KEYS = (
    "num_models",
    "enable_sr",
    "enable_fs",
    "alpha1",
    "alpha2",
    "bins_sr",
    "bins_fs",
    "decay",
    "sample_ratios",
    "sub_weights",
    "epochs",
    "early_stopping_rounds",
    "fs_rows",
)
"""Keys of the spec that steer the ensemble; the rest go to each LightGBM sub-model."""


@dataclass
class DoubleEnsemble:
    """Trained sub-models, the feature columns each one reads, and their weights."""

    boosters: list[Any]
    features: list[np.ndarray]
    sub_weights: np.ndarray

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Weighted mean of the sub-models' scores."""
        out = np.zeros(x.shape[0])
        for booster, cols, w in zip(self.boosters, self.features, self.sub_weights, strict=True):
            out += w * booster.predict(x[:, cols])
        return out / self.sub_weights[: len(self.boosters)].sum()


def pct_rank(values: np.ndarray) -> np.ndarray:
    """Percentile ranks along axis 0 (ties averaged), as pandas' `rank(pct=True)`."""
    from scipy.stats import rankdata

    return rankdata(values, axis=0) / values.shape[0]


def equal_width_bins(values: np.ndarray, bins: int) -> np.ndarray:
    """Bin id (0 .. bins-1) of each value over `bins` equal-width bins of its range.

    Bins are closed on the right, (a, b], the first one also holding the minimum (as
    `pandas.cut`, which Qlib's DoubleEnsemble uses).
    """
    lo, hi = float(np.min(values)), float(np.max(values))
    if hi <= lo:
        return np.zeros(values.shape, dtype=np.int64)
    edges = np.linspace(lo, hi, bins + 1)
    return np.clip(np.searchsorted(edges, values, side="left") - 1, 0, bins - 1)


def _loss_curve(booster: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(N, trees) squared error of each row after each tree of `booster`."""
    trees = booster.num_trees()
    curve = np.empty((x.shape[0], trees))
    pred = np.zeros(x.shape[0])
    for t in range(trees):
        pred += booster.predict(x, start_iteration=t, num_iteration=1)
        curve[:, t] = (y - pred) ** 2
    return curve


def _reweight(curve: np.ndarray, loss: np.ndarray, k: int, cfg: dict[str, Any]) -> np.ndarray:
    curve_rank = pct_rank(curve)
    part = max(int(curve.shape[1] * 0.1), 1)
    start, end = curve_rank[:, :part].mean(axis=1), curve_rank[:, -part:].mean(axis=1)
    h = cfg["alpha1"] * pct_rank(-loss) + cfg["alpha2"] * pct_rank(end / start)
    which = equal_width_bins(h, int(cfg["bins_sr"]))
    weights = np.empty_like(h)
    for b in np.unique(which):
        rows = which == b
        weights[rows] = 1.0 / (cfg["decay"] ** k * h[rows].mean() + 0.1)
    return weights


def _select(
    model: DoubleEnsemble,
    x: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    cfg: dict[str, Any],
) -> np.ndarray:
    """Features for the next sub-model, by the shuffle-importance g of each feature."""
    n_feat = x.shape[1]
    base = [b.predict(x[:, cols]) for b, cols in zip(model.boosters, model.features, strict=True)]
    m = len(base)
    pred = np.sum(base, axis=0) / m
    loss = (y - pred) ** 2
    g = np.zeros(n_feat)
    shuffled = x.copy()
    for f in range(n_feat):
        users = [i for i, cols in enumerate(model.features) if f in set(cols.tolist())]
        if not users:
            continue  # no sub-model reads f: shuffling it changes nothing (g = 0)
        shuffled[:, f] = rng.permutation(x[:, f])
        out = pred.copy()
        for i in users:
            cols = model.features[i]
            out += (model.boosters[i].predict(shuffled[:, cols]) - base[i]) / m
        rise = (y - out) ** 2 - loss
        g[f] = rise.mean() / (rise.std() + 1e-7)
        shuffled[:, f] = x[:, f]
    g = np.nan_to_num(g)
    which = equal_width_bins(g, int(cfg["bins_fs"]))
    ratios = list(cfg["sample_ratios"])
    chosen: list[int] = []
    for i, b in enumerate(sorted(np.unique(which), reverse=True)):
        members = np.flatnonzero(which == b)
        ratio = ratios[min(i, len(ratios) - 1)]
        take = int(np.ceil(ratio * members.size))
        chosen += rng.choice(members, size=take, replace=False).tolist()
    return np.array(sorted(set(chosen)), dtype=np.int64)


def _check(cfg: dict[str, Any]) -> None:
    n = int(cfg["num_models"])
    if n < 1 or len(cfg["sub_weights"]) != n:
        raise ConfigError(
            f"double_ensemble: sub_weights needs num_models={n} entries, "
            f"got {len(cfg['sub_weights'])}"
        )
    if len(cfg["sample_ratios"]) != int(cfg["bins_fs"]):
        raise ConfigError("double_ensemble: sample_ratios needs one entry per bins_fs bin")


def fit_double_ensemble(
    params: dict[str, Any],
    data: tuple[np.ndarray, ...],
    seed: int,
    progress: Progress = no_progress,
) -> DoubleEnsemble:
    """Train the DoubleEnsemble of LightGBM sub-models on (x_train, y_train, x_valid, y_valid)."""
    import lightgbm as lgb

    x_train, y_train, x_valid, y_valid = data
    cfg = {k: params[k] for k in DE_KEYS if k in params}
    booster_params = {k: v for k, v in params.items() if k not in DE_KEYS}
    booster_params |= {"seed": seed, "deterministic": True, "force_row_wise": True}
    booster_params |= {"verbosity": -1}
    _check(cfg)
    rng = np.random.default_rng(seed)
    n, n_feat = x_train.shape
    rounds, n_models = int(cfg["epochs"]), int(cfg["num_models"])
    fs_rows = min(int(cfg.get("fs_rows") or n), n)
    fs_pick = np.sort(rng.choice(n, fs_rows, replace=False)) if fs_rows < n else np.arange(n)
    weights, cols = np.ones(n), np.arange(n_feat)
    model = DoubleEnsemble([], [], np.asarray(cfg["sub_weights"], dtype=np.float64))
    sub_pred = np.zeros((n, n_models))
    patience = cfg.get("early_stopping_rounds")
    for k in range(n_models):
        train = lgb.Dataset(x_train[:, cols], y_train, weight=weights)
        valid_sets, callbacks = [], []

        def report(env: Any, k: int = k) -> None:
            progress(k * rounds + env.iteration + 1, n_models * rounds)

        callbacks.append(report)
        if patience and len(y_valid):
            valid_sets = [lgb.Dataset(x_valid[:, cols], y_valid, reference=train)]
            callbacks.append(lgb.early_stopping(int(patience), verbose=False))
        booster = lgb.train(
            booster_params, train, rounds, valid_sets=valid_sets, callbacks=callbacks
        )
        model.boosters.append(booster)
        model.features.append(cols)
        if k + 1 == n_models:
            break
        sub_pred[:, k] = booster.predict(x_train[:, cols])
        w = model.sub_weights[: k + 1]
        loss = (y_train - sub_pred[:, : k + 1] @ w / w.sum()) ** 2
        if cfg["enable_sr"]:
            curve = _loss_curve(booster, x_train[:, cols], y_train)
            weights = _reweight(curve, loss, k + 1, cfg)
        if cfg["enable_fs"]:
            cols = _select(model, x_train[fs_pick], y_train[fs_pick], rng, cfg)
    progress(n_models * rounds, n_models * rounds)
    return model
