"""Planted factor returns and stock alphas are recovered by the daily regression."""

from __future__ import annotations

import numpy as np
import pytest

from tests.attribution.planted import ALPHA, EVAL_DAYS, PlantedMarket
from tradebench.attribution.model import build_factor_model
from tradebench.data import load_dataset
from tradebench.features.style import STYLE_FACTORS
from tradebench.metrics.attribution import decompose
from tradebench.metrics.factor_model import FactorModel, FactorModelConfig


@pytest.fixture(scope="module")
def model(planted: PlantedMarket) -> FactorModel:
    ds = load_dataset(planted.path)
    config = FactorModelConfig(vif_threshold=np.inf, calibration_days=40)
    start, end = planted.eval_dates[0], planted.eval_dates[-1]
    return build_factor_model(ds.panel, str(start.date()), str(end.date()), config)


def test_regression_recovers_planted_lambdas(model: FactorModel, planted: PlantedMarket) -> None:
    assert model.factors == STYLE_FACTORS
    assert model.amount_source == "reported"
    est = model.fit.lambdas
    assert est.shape == planted.lambdas.shape == (EVAL_DAYS, len(STYLE_FACTORS))
    pooled = np.corrcoef(est.ravel(), planted.lambdas.ravel())[0, 1]
    assert pooled > 0.9
    for k, name in enumerate(STYLE_FACTORS):
        per_factor = np.corrcoef(est[:, k], planted.lambdas[:, k])[0, 1]
        assert per_factor > 0.8, name


def _book(model: FactorModel, columns: np.ndarray) -> np.ndarray:
    weights = np.zeros((len(model.dates), len(model.symbols)))
    weights[:, columns] = 1.0 / columns.size
    return weights


def _run(model: FactorModel, weights: np.ndarray):
    rows = np.arange(len(model.dates))
    holdings = (weights * np.nan_to_num(model.returns)).sum(axis=1)
    return decompose(model, rows, weights, holdings)


def test_planted_alpha_book_shows_selection_and_style_book_shows_none(
    model: FactorModel, planted: PlantedMarket
) -> None:
    alpha_cols = np.flatnonzero(planted.alpha > 0)
    alpha_daily = _run(model, _book(model, alpha_cols))
    assert alpha_daily["selection"].mean() > 0.6 * ALPHA
    # a pure style book: the highest-volatility names among those without an alpha
    k = STYLE_FACTORS.index("volatility")
    plain = np.flatnonzero(planted.alpha == 0)
    weights = np.zeros((len(model.dates), len(model.symbols)))
    for d in range(len(model.dates)):
        top = plain[np.argsort(-np.nan_to_num(model.exposures[k, d, plain]))[:40]]
        weights[d, top] = 1.0 / 40
    style_daily = _run(model, weights)
    assert style_daily["exposure_volatility"].mean() > 1.0
    assert abs(style_daily["selection"].mean()) < 0.15 * ALPHA
    assert abs(style_daily["selection"].sum()) < 0.25 * abs(style_daily["style"]).sum()
    assert np.allclose(style_daily["trading"], 0.0, atol=1e-15)
