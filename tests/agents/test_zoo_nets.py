"""The PyTorch zoo and DoubleEnsemble: each learns a planted signal; the pieces match
their definitions (sparsemax, causal convolutions, the correlation graph, the
DoubleEnsemble binning and re-weighting written out independently with pandas).

Skips without torch (deep models) or LightGBM (DoubleEnsemble).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from tradebench.agents.factor.data import SequenceSet
from tradebench.agents.factor.graph import correlation_graph
from tradebench.agents.factor.models import MODELS, fit_sequence_model

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="needs torch, from the zoo extra: pip install 'tradebench[zoo]'",
)
needs_lgb = pytest.mark.skipif(
    importlib.util.find_spec("lightgbm") is None,
    reason="needs lightgbm, from the ml extra: pip install 'tradebench[ml]'",
)
DEEP = ("lstm", "gru", "alstm", "transformer", "tcn", "tabnet", "gats")
TINY = {
    "lstm": {"hidden_size": 16, "num_layers": 1, "lr": 1e-2},
    "gru": {"hidden_size": 16, "num_layers": 1, "lr": 1e-2},
    "alstm": {"hidden_size": 16, "num_layers": 1, "lr": 1e-2},
    "transformer": {"d_model": 16, "num_layers": 1, "lr": 3e-3},
    "tcn": {"n_chans": 8, "num_layers": 2, "kernel_size": 3, "dropout": 0.0, "lr": 1e-2},
    "tabnet": {"n_d": 4, "n_a": 4, "n_steps": 1, "n_shared": 1, "n_ind": 1}
    | {"lr": 2e-2, "batch_size": 512},
    "gats": {"hidden_size": 8, "num_layers": 1, "dropout": 0.0, "lr": 2e-2, "graph_days": 20},
}


def _planted(step_len: int, seed: int = 0) -> SequenceSet:
    """y = x0 today + 0.5 x1 yesterday + noise, on a (rows, names, features) cube."""
    rng = np.random.default_rng(seed)
    rows, names, feats = 60, 40, 4
    cube = rng.normal(size=(rows, names, feats)).astype(np.float32)
    y = np.full((rows, names), np.nan)
    y[1:] = cube[1:, :, 0] + 0.5 * cube[:-1, :, 1] + 0.3 * rng.normal(size=(rows - 1, names))
    y = (y - np.nanmean(y, axis=1, keepdims=True)) / np.nanstd(y, axis=1, keepdims=True)
    first = 25  # graph window and sequence history before the training rows

    def pick(lo: int, hi: int) -> np.ndarray:
        r, c = np.meshgrid(np.arange(lo, hi), np.arange(names), indexing="ij")
        return np.stack([r.ravel(), c.ravel()], axis=1)

    rc_tr, rc_va = pick(first, 50), pick(52, 60)

    def index(rc: np.ndarray) -> pd.MultiIndex:
        days = pd.bdate_range("2024-01-01", periods=rows)[rc[:, 0]]
        return pd.MultiIndex.from_arrays([days, rc[:, 1].astype(str)], names=["date", "symbol"])

    close = np.cumprod(1 + 0.01 * rng.normal(size=(rows, names)), axis=0)
    return SequenceSet(
        cube=cube,
        rc_train=rc_tr,
        rc_valid=rc_va,
        y_train=y[rc_tr[:, 0], rc_tr[:, 1]],
        y_valid=y[rc_va[:, 0], rc_va[:, 1]],
        train_index=index(rc_tr),
        valid_index=index(rc_va),
        windows=None,  # type: ignore[arg-type]
        step_len=step_len,
        close=close,
        train_row0=first,
        vwap_source="test",
    )


@needs_torch
@pytest.mark.parametrize("arch", DEEP)
def test_every_deep_model_learns_a_planted_signal(arch: str) -> None:
    from tradebench.agents.factor.torch_fit import gather

    loop = {"n_epochs": 4, "early_stop": 4, "n_seeds": 2, "rows_per_epoch": None}
    spec, _ = MODELS.build(arch, **(loop | {"batch_size": 128} | TINY[arch]))
    data = _planted(spec.step_len if arch == "tabnet" else 5)
    model = fit_sequence_model(spec, data, seed=0)
    assert len(model.nets) == 2 and model.seeds == [0, 1]
    preds = []
    for r in np.unique(data.rc_valid[:, 0]):
        rc = data.rc_valid[data.rc_valid[:, 0] == r]
        x = gather(data.cube, rc, data.step_len)
        seeds = [model.predict(x, rc[:, 1], seed=i) for i in range(2)]
        mean = model.predict(x, rc[:, 1])
        np.testing.assert_allclose(mean, np.mean(seeds, axis=0), rtol=1e-5, atol=1e-6)
        preds.append(mean)
    corr = np.corrcoef(np.concatenate(preds), data.y_valid)[0, 1]
    assert corr > 0.4, corr


@needs_torch
def test_sparsemax_is_a_sparse_projection_onto_the_simplex() -> None:
    import torch

    from tradebench.agents.factor.nets import sparsemax

    z = torch.tensor([[2.0, 1.0, 0.1, -1.0], [0.0, 0.0, 0.0, 0.0]])
    p = sparsemax(z)
    np.testing.assert_allclose(p.sum(dim=1).numpy(), 1.0, atol=1e-6)
    # by hand: support {0, 1}: tau = (2 + 1 - 1) / 2 = 1 -> (1, 0, 0, 0)
    np.testing.assert_allclose(p[0].numpy(), [1.0, 0.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(p[1].numpy(), 0.25, atol=1e-6)


@needs_torch
def test_tcn_steps_never_read_later_steps() -> None:
    import torch

    from tradebench.agents.factor.nets import TCNNet

    torch.manual_seed(0)
    net = TCNNet(3, 8, 2, 3, 0.0).eval()
    x = torch.randn(4, 10, 3)
    later = x.clone()
    later[:, 6:] = torch.randn(4, 4, 3)
    with torch.no_grad():
        a = net.blocks(x.transpose(1, 2))[:, :, :6]
        b = net.blocks(later.transpose(1, 2))[:, :, :6]
    torch.testing.assert_close(a, b)


def test_correlation_graph_links_the_most_correlated_peers() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=(120, 2))
    ret = np.column_stack(
        [base[:, 0], base[:, 0] + 0.1 * rng.normal(size=120), base[:, 1], rng.normal(size=120)]
    )
    close = np.cumprod(1 + 0.01 * ret, axis=0)
    close[:60, 3] = np.nan  # too few returns: a self loop only
    adj = correlation_graph(close, top_k=1)
    assert adj[0, 1] and adj[1, 0] and adj.diagonal().all()
    assert not adj[3, :3].any() and not adj[:3, 3].any()
    assert (adj == adj.T).all()


@needs_lgb
def test_double_ensemble_binning_and_reweighting_match_their_definitions() -> None:
    from tradebench.agents.factor.double_ensemble import _reweight, equal_width_bins, pct_rank

    rng = np.random.default_rng(5)
    values = rng.normal(size=200)
    ties = np.round(values * 2) / 2  # values on the bin edges too
    for v in (values, ties, np.arange(11.0)):
        np.testing.assert_array_equal(equal_width_bins(v, 10), pd.cut(v, 10, labels=False))
    np.testing.assert_allclose(pct_rank(values), pd.Series(values).rank(pct=True))

    curve, loss = rng.random(size=(200, 20)), rng.random(size=200)
    cfg = {"alpha1": 1.0, "alpha2": 1.0, "bins_sr": 10, "decay": 0.5}
    got = _reweight(curve, loss, 2, cfg)
    # written out with pandas, term by term, from the paper's definition
    norm = pd.DataFrame(curve).rank(axis=0, pct=True)
    h = pd.Series(-loss).rank(pct=True) + (
        norm.iloc[:, -2:].mean(1) / norm.iloc[:, :2].mean(1)
    ).rank(pct=True)
    bins = pd.cut(h, 10)
    expected = 1.0 / (0.5**2 * h.groupby(bins, observed=True).transform("mean") + 0.1)
    np.testing.assert_allclose(got, expected.to_numpy())


@needs_lgb
def test_double_ensemble_keeps_the_signal_feature_and_reweights() -> None:
    from tradebench.agents.factor.double_ensemble import fit_double_ensemble

    rng = np.random.default_rng(11)
    x = rng.normal(size=(3000, 10))
    y = 2.0 * x[:, 0] + 0.5 * rng.normal(size=3000)
    spec, _ = MODELS.build(
        "double_ensemble",
        epochs=15,
        num_leaves=8,
        lambda_l1=0.0,
        lambda_l2=0.0,
        learning_rate=0.1,
        fs_rows=1000,
    )
    model = fit_double_ensemble(spec.kwargs(), (x, y, x[:0], y[:0]), seed=0)
    assert len(model.boosters) == 3
    assert all(0 in cols for cols in model.features)
    assert len(model.features[1]) < 10  # feature selection dropped some noise
    pred = model.predict(rng.normal(size=(500, 10)))
    assert pred.shape == (500,)
