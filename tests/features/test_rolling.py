"""Trailing-window operators: pinned to pandas/numpy references, and strictly causal."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tradebench.features import rolling as R

RNG = np.random.RandomState(1337)
X = RNG.normal(0.001, 0.02, (300, 7))
X[RNG.random_sample(X.shape) < 0.05] = np.nan
Y = 0.5 * X + RNG.normal(0, 0.02, X.shape)
PRICES = np.exp(np.cumsum(RNG.normal(0, 0.02, (300, 7)), axis=0)) * 50


def _pd(values: np.ndarray, window: int, min_periods: int | None = None):
    return pd.DataFrame(values).rolling(window, min_periods=min_periods or window)


@pytest.mark.parametrize("mp", [None, 40])
def test_moments_match_pandas(mp: int | None) -> None:
    for ours, theirs in [
        (R.rolling_mean(X, 60, mp), _pd(X, 60, mp).mean()),
        (R.rolling_sum(X, 60, mp), _pd(X, 60, mp).sum()),
        (R.rolling_std(X, 60, mp), _pd(X, 60, mp).std()),
        (R.rolling_skew(X, 60, mp), _pd(X, 60, mp).skew()),
        (R.rolling_max(X, 60, mp), _pd(X, 60, mp).max()),
        (R.rolling_min(X, 60, mp), _pd(X, 60, mp).min()),
    ]:
        np.testing.assert_allclose(ours, theirs.to_numpy(), rtol=1e-9, atol=1e-12)


def test_quantile_corr_rank_argmax_match_references() -> None:
    p = pd.DataFrame(PRICES)
    np.testing.assert_allclose(
        R.rolling_quantile(PRICES, 20, 0.8), p.rolling(20).quantile(0.8).to_numpy(), rtol=1e-12
    )
    corr = pd.DataFrame(X).rolling(20, min_periods=15).corr(pd.DataFrame(Y)).to_numpy()
    np.testing.assert_allclose(R.rolling_corr(X, Y, 20, 15), corr, rtol=1e-9, atol=1e-12)
    rank = p.rolling(10).rank(pct=True).to_numpy()
    np.testing.assert_allclose(R.rolling_rank_last(PRICES, 10), rank, rtol=1e-12)
    argmax = p.rolling(10).apply(lambda w: np.argmax(w) + 1, raw=True).to_numpy()
    np.testing.assert_array_equal(R.rolling_argmax(PRICES, 10), argmax)
    argmin = p.rolling(10).apply(lambda w: np.argmin(w) + 1, raw=True).to_numpy()
    np.testing.assert_array_equal(R.rolling_argmin(PRICES, 10), argmin)


def test_regression_matches_polyfit() -> None:
    slope, r2, resid = R.rolling_regression(PRICES, 20)
    t = np.arange(20)
    for row in (19, 150, 299):
        for col in (0, 6):
            y = PRICES[row - 19 : row + 1, col]
            b, a = np.polyfit(t, y, 1)
            assert slope[row, col] == pytest.approx(b, rel=1e-9)
            assert resid[row, col] == pytest.approx(y[-1] - (a + b * 19), abs=1e-9)
            assert r2[row, col] == pytest.approx(np.corrcoef(t, y)[0, 1] ** 2, rel=1e-9)
    assert np.isnan(slope[:19]).all()


def test_constant_windows_give_nan_not_noise() -> None:
    flat = np.full((40, 2), 3.7)
    assert np.isnan(R.rolling_corr(flat, X[:40, :2], 10)[9:]).all()
    assert np.isnan(R.rolling_regression(flat, 10)[1][9:]).all()
    assert np.isnan(R.rolling_skew(flat, 10)[9:]).all()


def test_every_operator_is_causal() -> None:
    """Rewriting rows >= t leaves every result row < t unchanged, bit for bit."""
    t = 150
    later = PRICES.copy()
    later[t:] = RNG.uniform(1, 1000, later[t:].shape)
    ops = [
        lambda v: R.rolling_mean(v, 20),
        lambda v: R.rolling_mean(v, 60, 40),
        lambda v: R.rolling_std(v, 20),
        lambda v: R.rolling_std(v, 60, 40),
        lambda v: R.rolling_skew(v, 60, 40),
        lambda v: R.rolling_sum(v, 30),
        lambda v: R.rolling_max(v, 252, 100),
        lambda v: R.rolling_quantile(v, 30, 0.2),
        lambda v: R.rolling_corr(v, np.log(v), 20),
        lambda v: R.rolling_rank_last(v, 30),
        lambda v: R.rolling_argmax(v, 30),
        lambda v: R.rolling_regression(v, 60)[0],
        lambda v: R.delay(v, 5),
    ]
    for op in ops:
        np.testing.assert_array_equal(op(PRICES)[:t], op(later)[:t])
