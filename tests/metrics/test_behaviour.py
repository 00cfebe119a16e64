"""Behaviour metrics against hand-computed series."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tradebench.errors import ConfigError, DataError
from tradebench.metrics import abstention_rate, annualized_turnover, cash_ratio, hhi

DATES = pd.to_datetime(["2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"])


def test_annualized_turnover_hand() -> None:
    # mean(1.0, 0.5, 1.0, 0.0) = 0.625; x 252 = 157.5.
    assert annualized_turnover([1.0, 0.5, 1.0, 0.0], 252) == pytest.approx(157.5)
    assert annualized_turnover([0.1, 0.1], 52) == pytest.approx(5.2)


def test_annualized_turnover_edges() -> None:
    assert math.isnan(annualized_turnover([], 252))
    assert annualized_turnover([0.0, 0.0], 252) == 0.0
    with pytest.raises(ConfigError):
        annualized_turnover([0.1], 0)


def test_hhi_hand() -> None:
    positions = pd.DataFrame(
        {
            "date": DATES[[0, 0, 2, 2]],
            "symbol": ["A", "B", "A", "B"],
            "weight": [0.25, 0.25, 0.6, 0.4],
        }
    )
    # Step HHIs: 0.0625 + 0.0625 = 0.125; 0 (no rows); 0.36 + 0.16 = 0.52; 0.
    assert hhi(positions, DATES) == pytest.approx((0.125 + 0.0 + 0.52 + 0.0) / 4)


def test_hhi_single_name_fully_invested_is_one() -> None:
    positions = pd.DataFrame({"date": DATES, "weight": [1.0] * 4})
    assert hhi(positions, DATES) == pytest.approx(1.0)


def test_hhi_all_cash_is_zero() -> None:
    empty = pd.DataFrame({"date": pd.to_datetime([]), "weight": np.empty(0)})
    assert hhi(empty, DATES) == 0.0


def test_hhi_no_steps_is_nan() -> None:
    empty = pd.DataFrame({"date": pd.to_datetime([]), "weight": np.empty(0)})
    assert math.isnan(hhi(empty, pd.to_datetime([])))


def test_hhi_rejects_stray_dates_and_missing_columns() -> None:
    stray = pd.DataFrame({"date": pd.to_datetime(["2023-12-29"]), "weight": [1.0]})
    with pytest.raises(DataError, match="not steps"):
        hhi(stray, DATES)
    with pytest.raises(DataError, match="weight"):
        hhi(pd.DataFrame({"date": DATES}), DATES)


def test_hhi_nan_weight_is_nan() -> None:
    positions = pd.DataFrame({"date": DATES[:2], "weight": [0.5, float("nan")]})
    assert math.isnan(hhi(positions, DATES))


def test_cash_ratio_hand() -> None:
    # 55/110, 99/99, 0/108.9, 108.9/108.9 -> mean(0.5, 1, 0, 1) = 0.625.
    cash = [55.0, 99.0, 0.0, 108.9]
    nav = [110.0, 99.0, 108.9, 108.9]
    assert cash_ratio(cash, nav) == pytest.approx(0.625)


def test_cash_ratio_edges() -> None:
    assert math.isnan(cash_ratio([], []))
    with pytest.raises(DataError, match="aligned"):
        cash_ratio([1.0], [1.0, 2.0])


def test_abstention_rate_hand() -> None:
    assert abstention_rate([2, 1, 1, 0]) == 0.25
    assert abstention_rate([0, 0]) == 1.0
    assert abstention_rate(pd.Series([3, 1], dtype="Int64")) == 0.0


def test_abstention_rate_edges() -> None:
    assert math.isnan(abstention_rate([]))
    assert math.isnan(abstention_rate(pd.Series([0, None], dtype="Int64")))
