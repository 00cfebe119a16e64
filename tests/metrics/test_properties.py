"""Property tests: seeded random paths (default_rng(1337)) and derandomised hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tradebench.metrics import (
    brier,
    calibration_bins,
    ece,
    hhi,
    information_ratio,
    max_drawdown,
    sharpe,
    simple_returns,
    total_return,
    wilson_interval,
)

SEED = 1337
PROPS = settings(max_examples=60, deadline=None, derandomize=True)

returns_lists = st.lists(
    st.floats(min_value=-0.5, max_value=0.5, allow_nan=False), min_size=0, max_size=60
)


def _nav(returns: list[float] | np.ndarray, initial: float) -> np.ndarray:
    return initial * np.cumprod(1.0 + np.asarray(returns, dtype=float))


def _paths(n_paths: int = 20, length: int = 250) -> list[np.ndarray]:
    rng = np.random.default_rng(SEED)
    return [rng.normal(0.0005, 0.015, length) for _ in range(n_paths)]


def test_scaling_nav_leaves_return_metrics_unchanged() -> None:
    for i, r in enumerate(_paths()):
        nav = _nav(r, 1_000_000.0)
        scale = 10.0 ** (i % 7 - 3)
        assert total_return(nav * scale, 1_000_000.0 * scale) == pytest.approx(
            total_return(nav, 1_000_000.0), rel=1e-9, abs=1e-12
        )
        assert max_drawdown(nav * scale, 1_000_000.0 * scale) == pytest.approx(
            max_drawdown(nav, 1_000_000.0), rel=1e-9, abs=1e-12
        )
        assert sharpe(simple_returns(nav * scale, 1_000_000.0 * scale)) == pytest.approx(
            sharpe(simple_returns(nav, 1_000_000.0)), rel=1e-9
        )


def test_total_return_is_compounded_returns() -> None:
    for r in _paths():
        assert total_return(_nav(r, 50.0), 50.0) == pytest.approx(
            float(np.prod(1 + r) - 1), rel=1e-9, abs=1e-12
        )


def test_sharpe_invariant_to_periods_up_to_sqrt() -> None:
    for r in _paths(5):
        assert sharpe(r, 12) * math.sqrt(252 / 12) == pytest.approx(sharpe(r, 252))


def test_information_ratio_against_zero_benchmark_is_sharpe() -> None:
    for r in _paths(5):
        assert information_ratio(r, np.zeros_like(r)) == pytest.approx(sharpe(r))


@PROPS
@given(returns_lists)
def test_sharpe_sign_follows_mean(returns: list[float]) -> None:
    s = sharpe(returns)
    if math.isnan(s):
        return
    mean = float(np.mean(returns))
    assert s == 0.0 if mean == 0 else np.sign(s) == np.sign(mean)


@PROPS
@given(returns_lists, st.floats(min_value=1e-3, max_value=1e9))
def test_max_drawdown_in_unit_interval(returns: list[float], initial: float) -> None:
    dd = max_drawdown(_nav(returns, initial), initial)
    if not returns:
        assert math.isnan(dd)
    else:
        assert 0.0 <= dd <= 1.0


@PROPS
@given(returns_lists)
def test_information_ratio_antisymmetric(returns: list[float]) -> None:
    bench = np.roll(np.asarray(returns, dtype=float), 1) * 0.5
    a, b = information_ratio(returns, bench), information_ratio(bench, returns)
    assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(-b)


@PROPS
@given(st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=6))
def test_hhi_equal_weights_is_one_over_n(names_per_day: list[int]) -> None:
    dates = pd.date_range("2024-01-01", periods=len(names_per_day))
    rows = [(d, 1.0 / n) for d, n in zip(dates, names_per_day, strict=True) for _ in range(n)]
    positions = pd.DataFrame(rows, columns=["date", "weight"])
    expected = float(np.mean([1.0 / n for n in names_per_day]))
    assert hhi(positions, dates) == pytest.approx(expected)


@PROPS
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=9), st.integers(min_value=1, max_value=12)),
        min_size=1,
        max_size=10,
    ),
    st.data(),
)
def test_ece_of_perfectly_calibrated_bins_is_zero(
    bins: list[tuple[int, int]], data: st.DataObject
) -> None:
    # In each chosen bin, m orders all at confidence c, of which exactly c*m are right,
    # where c = j/m is drawn inside the bin.
    confidence: list[float] = []
    outcome: list[float] = []
    for k, m in bins:
        lows = [j for j in range(m + 1) if k / 10 <= j / m < (k + 1) / 10 or (k == 9 and j == m)]
        if not lows:
            continue
        j = data.draw(st.sampled_from(lows))
        confidence += [j / m] * m
        outcome += [1.0] * j + [0.0] * (m - j)
    value = ece(confidence, outcome)
    if confidence:
        assert value == pytest.approx(0.0, abs=1e-12)
    else:
        assert math.isnan(value)


@PROPS
@given(
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=1), st.sampled_from([0.0, 1.0])),
        min_size=1,
        max_size=80,
    )
)
def test_calibration_bounds(pairs: list[tuple[float, float]]) -> None:
    c, o = zip(*pairs, strict=True)
    assert 0.0 <= ece(c, o) <= 1.0
    assert 0.0 <= brier(c, o) <= 1.0
    assert int(calibration_bins(c, o)["count"].sum()) == len(pairs)


def test_ece_at_most_mean_absolute_error() -> None:
    rng = np.random.default_rng(SEED)
    for _ in range(20):
        c = rng.uniform(size=200)
        o = (rng.uniform(size=200) < c).astype(float)
        assert ece(c, o) <= float(np.mean(np.abs(c - o))) + 1e-12


@PROPS
@given(st.integers(min_value=1, max_value=500), st.data())
def test_wilson_contains_estimate(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=0, max_value=n))
    got = wilson_interval(k, n)
    assert 0.0 <= got.low <= got.estimate <= got.high <= 1.0
    assert got.low < got.high
