"""Return and risk metrics against hand-computed series."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tradebench.errors import ConfigError, DataError
from tradebench.metrics import (
    TRADING_DAYS_PER_YEAR,
    ZERO_STD,
    information_ratio,
    max_drawdown,
    sharpe,
    simple_returns,
    total_return,
)

# Start 100, NAV 110, 99, 108.9: daily returns +10%, -10%, +10%.
INITIAL = 100.0
NAV = [110.0, 99.0, 108.9]


def test_trading_days_constant() -> None:
    assert TRADING_DAYS_PER_YEAR == 252


def test_simple_returns_with_initial_includes_first_day() -> None:
    assert simple_returns(NAV, INITIAL) == pytest.approx([0.10, -0.10, 0.10])


def test_simple_returns_without_initial_drops_first_day() -> None:
    assert simple_returns([10.0, 11.0, 9.9]) == pytest.approx([0.10, -0.10])
    assert len(simple_returns([10.0])) == 0
    assert len(simple_returns([])) == 0
    assert len(simple_returns([], 10.0)) == 0


def test_simple_returns_always_ndarray() -> None:
    out = simple_returns(pd.Series(NAV, index=[5, 6, 7]), INITIAL)
    assert type(out) is np.ndarray


def test_total_return_hand() -> None:
    assert total_return(NAV, INITIAL) == pytest.approx(0.089)
    assert total_return([100.0], INITIAL) == 0.0
    assert total_return([50.0], INITIAL) == pytest.approx(-0.5)


def test_total_return_empty_is_nan() -> None:
    assert math.isnan(total_return([], INITIAL))


@pytest.mark.parametrize("bad", [0.0, -5.0, float("nan"), float("inf")])
def test_non_positive_initial_raises(bad: float) -> None:
    with pytest.raises(DataError, match="initial"):
        total_return(NAV, bad)
    with pytest.raises(DataError, match="initial"):
        max_drawdown(NAV, bad)


def test_sharpe_hand() -> None:
    # r = (0.1, -0.1, 0.1): mean 1/30, deviations (1/15, -2/15, 1/15),
    # var (ddof=1) = (1/225 + 4/225 + 1/225) / 2 = 1/75, mean/std = sqrt(75)/30 = 1/sqrt(12),
    # annualised: sqrt(252/12) = sqrt(21).
    assert sharpe([0.1, -0.1, 0.1], 252) == pytest.approx(math.sqrt(21))
    assert sharpe(simple_returns(NAV, INITIAL)) == pytest.approx(math.sqrt(21))


def test_sharpe_periods_per_year_is_explicit() -> None:
    # Weekly annualisation scales by sqrt(52) instead of sqrt(252).
    assert sharpe([0.1, -0.1, 0.1], 52) == pytest.approx(math.sqrt(52 / 12))


def test_sharpe_too_short_is_nan() -> None:
    assert math.isnan(sharpe([]))
    assert math.isnan(sharpe([0.05]))


def test_sharpe_constant_returns_is_nan() -> None:
    assert math.isnan(sharpe(simple_returns([100.0] * 5, 100.0)))
    assert math.isnan(sharpe([0.01] * 10))


def test_sharpe_float_noise_counts_as_constant() -> None:
    # NAV compounding at exactly 1% a day: the computed returns differ in the last bits.
    nav = 100.0 * 1.01 ** np.arange(1, 30)
    returns = simple_returns(nav, 100.0)
    assert returns.max() != returns.min()
    assert math.isnan(sharpe(returns))
    assert ZERO_STD == 1e-12


def test_sharpe_nan_input_is_nan() -> None:
    assert math.isnan(sharpe([0.01, float("nan"), 0.02]))


def test_sharpe_negative() -> None:
    assert sharpe([-0.1, 0.1, -0.1], 252) == pytest.approx(-math.sqrt(21))


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_bad_periods_per_year_raises(bad: float) -> None:
    with pytest.raises(ConfigError, match="periods_per_year"):
        sharpe([0.1, 0.2], bad)


def test_max_drawdown_hand() -> None:
    # Wealth 100, 110, 99, 108.9: peak 110, trough 99 -> 11 / 110 = 0.1.
    assert max_drawdown(NAV, INITIAL) == pytest.approx(0.1)
    # Two drawdowns: 120 -> 90 (0.25) and 130 -> 104 (0.2).
    assert max_drawdown([120.0, 90.0, 130.0, 104.0], 100.0) == pytest.approx(0.25)


def test_max_drawdown_peak_includes_initial() -> None:
    # First day loses 10% of the start capital; the later rise never regains 100.
    assert max_drawdown([90.0, 95.0], 100.0) == pytest.approx(0.1)
    assert max_drawdown([90.0], 100.0) == pytest.approx(0.1)


def test_max_drawdown_rising_is_zero() -> None:
    assert max_drawdown([101.0, 102.0, 103.0], 100.0) == 0.0
    assert max_drawdown([100.0, 100.0], 100.0) == 0.0


def test_max_drawdown_empty_or_nan_is_nan() -> None:
    assert math.isnan(max_drawdown([], 100.0))
    assert math.isnan(max_drawdown([100.0, float("nan")], 100.0))


def test_information_ratio_hand() -> None:
    # active = (0.01, -0.01, 0.02): mean 1/150, var (ddof=1) = 7/30000,
    # mean/std = sqrt(4/21); annualised: sqrt(4/21 * 252) = sqrt(48).
    r = [0.02, 0.00, 0.01]
    b = [0.01, 0.01, -0.01]
    assert information_ratio(r, b, 252) == pytest.approx(math.sqrt(48))
    assert information_ratio(b, r, 252) == pytest.approx(-math.sqrt(48))


def test_information_ratio_edges() -> None:
    assert math.isnan(information_ratio([0.01], [0.02]))
    assert math.isnan(information_ratio([], []))
    # Same series: zero tracking error.
    assert math.isnan(information_ratio([0.01, 0.03], [0.01, 0.03]))
    # A constant active return also has zero tracking error.
    assert math.isnan(information_ratio([0.02, 0.04], [0.01, 0.03]))
    assert math.isnan(information_ratio([0.01, float("nan"), 0.0], [0.0, 0.0, 0.0]))
    # A replica of the benchmark whose returns differ only by float noise.
    bench = np.random.default_rng(1337).normal(0.0, 0.01, 100)
    replica = (1 + bench) * 3.0 / 3.0 - 1
    assert math.isnan(information_ratio(replica, bench))


def test_information_ratio_misaligned_raises() -> None:
    with pytest.raises(DataError, match="aligned"):
        information_ratio([0.01, 0.02, 0.03], [0.01, 0.02])


def test_returns_are_plain_floats() -> None:
    series = pd.Series(NAV)
    for value in (
        total_return(series, INITIAL),
        max_drawdown(series, INITIAL),
        sharpe(pd.Series([0.1, -0.1, 0.1])),
        information_ratio(pd.Series([0.02, 0.0, 0.01]), np.array([0.01, 0.01, -0.01])),
    ):
        assert type(value) is float


def test_non_numeric_raises() -> None:
    with pytest.raises(DataError, match="numeric"):
        sharpe(["a", "b"])
    with pytest.raises(DataError, match="one-dimensional"):
        sharpe([[0.1, 0.2], [0.3, 0.4]])
