"""ECE, Brier and the reliability table against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tradebench.errors import ConfigError, DataError
from tradebench.metrics import CALIBRATION_BINS, brier, calibration_bins, ece

NAN = float("nan")
# Scored orders: (0.9, 1), (0.7, 0), (0.75, 1); the last two are not scored.
CONFIDENCE = [0.9, 0.7, 0.75, 0.2, NAN]
OUTCOME = [1.0, 0.0, 1.0, NAN, 1.0]


def test_default_bins() -> None:
    assert CALIBRATION_BINS == 10


def test_ece_hand() -> None:
    # Bin [0.9, 1]: 1 order, |1 - 0.9| = 0.1, weight 1/3.
    # Bin [0.7, 0.8): 2 orders, |0.5 - 0.725| = 0.225, weight 2/3.
    assert ece(CONFIDENCE, OUTCOME) == pytest.approx(0.1 / 3 + 2 / 3 * 0.225)


def test_brier_hand() -> None:
    # (0.1^2 + 0.7^2 + 0.25^2) / 3 = 0.5625 / 3.
    assert brier(CONFIDENCE, OUTCOME) == pytest.approx(0.1875)


def test_brier_constant_half_is_quarter() -> None:
    assert brier([0.5] * 4, [1.0, 0.0, 1.0, 1.0]) == pytest.approx(0.25)


def test_bins_are_half_open_with_closed_last_bin() -> None:
    conf = [0.0, 0.1, 0.3, 0.7, 0.8999, 0.9, 1.0]
    table = calibration_bins(conf, [1.0] * len(conf))
    assert list(table["count"]) == [1, 1, 0, 1, 0, 0, 0, 1, 1, 2]
    assert list(table["lower"])[3] == 0.3
    assert table["upper"].iloc[-1] == 1.0
    assert table["mean_confidence"].iloc[9] == pytest.approx(0.95)
    assert math.isnan(table["mean_outcome"].iloc[2])


def test_ece_bin_boundary_matters() -> None:
    # 0.3 sits in [0.3, 0.4) with 0.35, not in [0.2, 0.3) with 0.25.
    # Bin 3: confidences (0.3, 0.35) mean 0.325, outcomes (1, 0) mean 0.5 -> 0.175, weight 2/3.
    # Bin 2: confidence 0.25, outcome 0 -> 0.25, weight 1/3.
    got = ece([0.3, 0.35, 0.25], [1.0, 0.0, 0.0])
    assert got == pytest.approx(2 / 3 * 0.175 + 1 / 3 * 0.25)


def test_ece_perfect_and_worst() -> None:
    assert ece([0.25] * 4, [1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.0, abs=1e-15)
    assert ece([1.0, 0.0], [0.0, 1.0]) == 1.0


def test_ece_custom_bins() -> None:
    # One bin: |mean outcome - mean confidence| = |0.5 - 0.45|.
    assert ece([0.1, 0.8], [0.0, 1.0], n_bins=1) == pytest.approx(0.05)


def test_no_scored_orders_is_nan() -> None:
    assert math.isnan(ece([], []))
    assert math.isnan(brier([], []))
    assert math.isnan(ece([NAN, 0.5], [1.0, NAN]))
    assert math.isnan(brier([NAN, NAN], [NAN, NAN]))
    table = calibration_bins([], [])
    assert len(table) == 10 and table["count"].sum() == 0


@pytest.mark.parametrize(("conf", "out"), [([1.2], [1.0]), ([-0.1], [0.0]), ([0.5], [2.0])])
def test_out_of_range_raises(conf: list, out: list) -> None:
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        ece(conf, out)
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        brier(conf, out)


def test_misaligned_and_bad_bins_raise() -> None:
    with pytest.raises(DataError, match="aligned"):
        brier([0.5, 0.5], [1.0])
    with pytest.raises(ConfigError, match="n_bins"):
        ece([0.5], [1.0], n_bins=0)
    with pytest.raises(ConfigError, match="n_bins"):
        ece([0.5], [1.0], n_bins=2.5)  # type: ignore[arg-type]


def test_results_are_plain_floats() -> None:
    assert type(ece(np.array([0.5]), np.array([1.0]))) is float
    assert type(brier(np.array([0.5]), np.array([1.0]))) is float
