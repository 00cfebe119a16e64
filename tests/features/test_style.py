"""Style factor definitions, winsorisation and standardisation, the amount estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tradebench.features.style import (
    AMOUNT_ESTIMATED,
    AMOUNT_REPORTED,
    STYLE_FACTORS,
    StyleInputs,
    _amount,
    raw_style_factors,
    standardise,
    winsorise,
)

RNG = np.random.RandomState(1337)
T, N = 320, 6
CLOSE = np.exp(np.cumsum(RNG.normal(0, 0.02, (T, N)), axis=0)) * 20
OPEN = CLOSE * np.exp(RNG.normal(0, 0.01, (T, N)))
VOLUME = np.exp(RNG.normal(14, 0.4, (T, N)))
INPUTS = StyleInputs(
    adj_open=OPEN,
    adj_close=CLOSE,
    volume=VOLUME,
    amount=VOLUME * CLOSE,
    tradable=np.ones((T, N), dtype=bool),
    amount_source=AMOUNT_REPORTED,
)


@pytest.fixture(scope="module")
def raw() -> dict[str, np.ndarray]:
    return raw_style_factors(INPUTS)


def test_nine_factors_in_display_order(raw: dict[str, np.ndarray]) -> None:
    assert tuple(raw) == STYLE_FACTORS
    assert len(STYLE_FACTORS) == 9
    assert all(v.shape == (T, N) for v in raw.values())


def test_price_factors(raw: dict[str, np.ndarray]) -> None:
    s, c = T - 1, CLOSE
    np.testing.assert_allclose(raw["momentum"][s], np.log(c[s - 21] / c[s - 252]), rtol=1e-12)
    np.testing.assert_allclose(raw["reversal"][s], -np.log(c[s] / c[s - 21]), rtol=1e-12)
    high = c[s - 251 : s + 1].max(axis=0)
    np.testing.assert_allclose(raw["high_52w"][s], c[s] / high, rtol=1e-12)
    assert np.isnan(raw["momentum"][251]).all() and np.isfinite(raw["momentum"][252]).all()
    intraday = np.log(c[s - 19 : s + 1] / OPEN[s - 19 : s + 1]).sum(axis=0)
    np.testing.assert_allclose(raw["intraday_momentum"][s], intraday, rtol=1e-9)


def test_return_and_amount_factors(raw: dict[str, np.ndarray]) -> None:
    s = T - 1
    ret = pd.DataFrame(CLOSE).pct_change()
    window = ret.iloc[s - 59 : s + 1]
    np.testing.assert_allclose(raw["volatility"][s], window.std().to_numpy(), rtol=1e-9)
    np.testing.assert_allclose(raw["skewness"][s], window.skew().to_numpy(), rtol=1e-7)
    amount = pd.DataFrame(VOLUME * CLOSE).iloc[s - 59 : s + 1]
    np.testing.assert_allclose(raw["liquidity"][s], np.log(amount.mean()).to_numpy(), rtol=1e-12)
    cv = (amount.std() / amount.mean()).to_numpy()
    np.testing.assert_allclose(raw["amount_variability"][s], cv, rtol=1e-9)
    dlogv = pd.DataFrame(np.log(VOLUME)).diff().iloc[s - 19 : s + 1]
    corr = ret.iloc[s - 19 : s + 1].corrwith(dlogv).to_numpy()
    np.testing.assert_allclose(raw["volume_return_corr"][s], corr, rtol=1e-9)


def test_winsorise_then_standardise_on_the_universe_only() -> None:
    values = RNG.normal(size=(3, 200))
    values[:, 0] = 50.0  # an outlier inside the universe
    values[:, 1] = 1e6  # outside the universe: must not move the scale
    universe = np.ones(values.shape, dtype=bool)
    universe[:, 1] = False
    clipped = winsorise(values, universe, 0.01)
    hi = np.quantile(values[:, [0, *range(2, 200)]], 0.99, axis=1)
    np.testing.assert_allclose(clipped[:, 0], hi)
    np.testing.assert_allclose(clipped[:, 1], hi)
    z = standardise(clipped, universe)
    inside = z[:, universe[0]]
    np.testing.assert_allclose(inside.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(inside.std(axis=1), 1.0, atol=1e-12)
    assert np.isfinite(z[:, 1]).all()


def test_amount_is_estimated_and_labelled_when_missing() -> None:
    volume, close = np.full((2, 3), 100.0), np.full((2, 3), 5.0)
    values, source = _amount(np.full((2, 3), np.nan), volume, close)
    assert source == AMOUNT_ESTIMATED and (values == 500.0).all()
    assert _amount(np.full((2, 3), 7.0), volume, close)[1] == AMOUNT_REPORTED
    mixed = np.array([[7.0, np.nan, 7.0], [7.0, 7.0, 7.0]])
    assert "mixed" in _amount(mixed, volume, close)[1]
