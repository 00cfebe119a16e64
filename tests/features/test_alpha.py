"""Alpha158-style features: definitions, the decision-time row, and no look-ahead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.features.tamper import tampered
from tradebench.agents.factor.data import prediction_features
from tradebench.data import load_dataset
from tradebench.data.panel import Panel
from tradebench.features.alpha import (
    FEATURES,
    VWAP_ESTIMATED,
    AlphaInputs,
    alpha_features,
    alpha_features_last,
    forward_label,
    inputs_from_panel,
)
from tradebench.view import MarketView

RNG = np.random.RandomState(1337)
T, N = 90, 4
C = np.exp(np.cumsum(RNG.normal(0, 0.02, (T, N)), axis=0)) * 30
OPEN = C * np.exp(RNG.normal(0, 0.01, (T, N)))
H = np.maximum(OPEN, C) * (1 + RNG.uniform(0, 0.02, (T, N)))
L = np.minimum(OPEN, C) * (1 - RNG.uniform(0, 0.02, (T, N)))
V = np.exp(RNG.normal(14, 0.4, (T, N)))
INPUTS = AlphaInputs(OPEN, H, L, C, (H + L + C) / 3, V, "test")


@pytest.fixture(scope="module")
def feats() -> dict[str, np.ndarray]:
    values = alpha_features(INPUTS).values
    return {name: values[i].astype(np.float64) for i, name in enumerate(FEATURES)}


def test_158_named_features() -> None:
    assert len(FEATURES) == len(set(FEATURES)) == 158
    assert FEATURES[:3] == ("KMID", "KLEN", "KMID2") and FEATURES[-1] == "VSUMD60"


def _check(got: np.ndarray, expected: pd.DataFrame | np.ndarray) -> None:
    want = expected.to_numpy() if isinstance(expected, pd.DataFrame) else expected
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_definitions_against_pandas(feats: dict[str, np.ndarray]) -> None:
    c, v = pd.DataFrame(C), pd.DataFrame(V)
    _check(feats["KMID"], (C - OPEN) / OPEN)
    _check(feats["KSFT2"], (2 * C - H - L) / (H - L + 1e-12))
    _check(feats["ROC5"], c.shift(5) / c)
    _check(feats["MA10"], c.rolling(10).mean() / c)
    _check(feats["STD20"], c.rolling(20).std() / c)
    _check(feats["MAX30"], pd.DataFrame(H).rolling(30).max() / c)
    _check(feats["QTLU20"], c.rolling(20).quantile(0.8) / c)
    _check(feats["RANK10"], c.rolling(10).rank(pct=True))
    _check(feats["IMAX20"], pd.DataFrame(H).rolling(20).apply(np.argmax, raw=True).add(1) / 20)
    _check(feats["CORR10"], c.rolling(10).corr(np.log(v + 1)))
    _check(feats["CORD5"], (c / c.shift(1)).rolling(5).corr(np.log(v / v.shift(1) + 1)))
    _check(
        feats["CNTP20"], (c > c.shift(1)).astype(float).where(c.shift(1).notna()).rolling(20).mean()
    )
    diff = c - c.shift(1)
    sump = diff.clip(lower=0).rolling(10).sum() / (diff.abs().rolling(10).sum() + 1e-12)
    _check(feats["SUMP10"], sump)
    _check(feats["VMA5"], v.rolling(5).mean() / (v + 1e-12))
    weighted = (c / c.shift(1) - 1).abs() * v
    _check(feats["WVMA10"], weighted.rolling(10).std() / (weighted.rolling(10).mean() + 1e-12))


def test_trend_features_against_polyfit(feats: dict[str, np.ndarray]) -> None:
    s, t = T - 1, np.arange(5)
    for col in range(N):
        y = C[s - 4 : s + 1, col]
        b, a = np.polyfit(t, y, 1)
        assert feats["BETA5"][s, col] == pytest.approx(b / C[s, col], rel=1e-4)
        assert feats["RESI5"][s, col] == pytest.approx((y[-1] - a - 4 * b) / C[s, col], abs=1e-5)
        assert feats["RSQR5"][s, col] == pytest.approx(np.corrcoef(t, y)[0, 1] ** 2, rel=1e-4)


def test_last_row_shortcut_equals_the_full_computation(feats: dict[str, np.ndarray]) -> None:
    last = alpha_features_last(INPUTS)
    full = np.stack([feats[f][-1] for f in FEATURES])
    np.testing.assert_allclose(last, full, rtol=1e-5, atol=1e-6)


def test_label_is_close_t2_over_close_t1() -> None:
    label = forward_label(C, np.ones(C.shape, dtype=bool))
    np.testing.assert_allclose(label[:-2], C[2:] / C[1:-1] - 1)
    assert np.isnan(label[-2:]).all()


@pytest.fixture(scope="module")
def panel(cn_dataset_dir: Path) -> Panel:
    return load_dataset(cn_dataset_dir).panel


def test_features_before_t_ignore_data_from_t_on(panel: Panel) -> None:
    day = "2024-06-03"
    t = int(np.searchsorted(panel.dates, np.datetime64(day)))
    fake = tampered(panel, t)
    clean = alpha_features(inputs_from_panel(panel, t - 100, t + 40))
    dirty = alpha_features(inputs_from_panel(fake, t - 100, t + 40))
    np.testing.assert_array_equal(clean.values[:, 99], dirty.values[:, 99])
    assert not np.array_equal(clean.values[:, 100], dirty.values[:, 100], equal_nan=True)
    assert clean.vwap_source == VWAP_ESTIMATED
    at_decision = prediction_features(MarketView(fake, day), normalise=False)
    np.testing.assert_allclose(at_decision, clean.values[:, 99].T, rtol=1e-5, atol=1e-6)
    assert np.isfinite(at_decision).mean() > 0.5


def test_a_requested_subset_equals_those_rows_of_the_full_computation() -> None:
    """`alpha_features(inputs, names)` computes only `names` (a sequence model's 20), in the
    order asked, bit for bit the rows of the full 158; k-bar names ending in a digit
    (`KMID2`) are not rolling windows."""
    full = alpha_features(INPUTS).values
    rng = np.random.default_rng(7)
    subsets = [("KMID2", "KLOW", "OPEN0"), ("VSUMD60", "KUP2", "CORD5", "RSQR10")]
    subsets += [tuple(rng.choice(FEATURES, size=k, replace=False)) for k in (1, 20, 75)]
    for names in subsets:
        got = alpha_features(INPUTS, names)
        assert got.names == names
        want = full[[FEATURES.index(n) for n in names]]
        assert got.values.tobytes() == want.tobytes(), names
    with pytest.raises(Exception, match="unknown features"):
        alpha_features(INPUTS, ("KMID", "NOPE5"))
