"""Wilson and bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tradebench.errors import ConfigError, DataError
from tradebench.metrics import Interval, bootstrap_mean_ci, wilson_interval


def test_wilson_published_values() -> None:
    # 8/10 at 95%: (0.4902, 0.9433); 0/10: (0, 0.2775) (Brown, Cai & DasGupta 2001 formula).
    got = wilson_interval(8, 10)
    assert got.estimate == 0.8
    assert got.low == pytest.approx(0.4902, abs=1e-4)
    assert got.high == pytest.approx(0.9433, abs=1e-4)
    zero = wilson_interval(0, 10)
    assert zero.low == 0.0
    assert zero.high == pytest.approx(0.2775, abs=1e-4)
    full = wilson_interval(10, 10)
    assert full.high == 1.0
    assert full.low == pytest.approx(1 - 0.2775, abs=1e-4)


def test_wilson_hand_formula_90() -> None:
    # z(0.95) = 1.6448536; 50/100: centre 0.5, half = z / (1 + z^2/100) * sqrt(0.0025 + z^2/40000).
    z = 1.6448536269514722
    half = z / (1 + z * z / 100) * math.sqrt(0.25 / 100 + z * z / 40000)
    got = wilson_interval(50, 100, confidence=0.90)
    assert got.low == pytest.approx(0.5 - half)
    assert got.high == pytest.approx(0.5 + half)
    assert got.confidence == 0.90


def test_wilson_empty_is_nan() -> None:
    got = wilson_interval(0, 0)
    assert math.isnan(got.estimate) and math.isnan(got.low) and math.isnan(got.high)


@pytest.mark.parametrize(("k", "n"), [(11, 10), (-1, 10), (1.5, 10)])
def test_wilson_bad_counts_raise(k: float, n: int) -> None:
    with pytest.raises(DataError):
        wilson_interval(k, n)  # type: ignore[arg-type]


@pytest.mark.parametrize("conf", [0.0, 1.0, 1.5])
def test_bad_confidence_raises(conf: float) -> None:
    with pytest.raises(ConfigError, match="confidence"):
        wilson_interval(1, 2, confidence=conf)
    with pytest.raises(ConfigError, match="confidence"):
        bootstrap_mean_ci([1.0, 2.0], confidence=conf)


def test_bootstrap_is_seeded() -> None:
    x = np.random.default_rng(1337).normal(size=50)
    a = bootstrap_mean_ci(x, seed=7, n_resamples=2000)
    assert a == bootstrap_mean_ci(x, seed=7, n_resamples=2000)
    assert a != bootstrap_mean_ci(x, seed=8, n_resamples=2000)
    assert a.estimate == pytest.approx(float(np.mean(x)))
    assert a.low < a.estimate < a.high


def test_bootstrap_width_matches_normal_theory() -> None:
    x = np.random.default_rng(1337).normal(size=400)
    got = bootstrap_mean_ci(x, n_resamples=4000)
    expected = 2 * 1.959964 * np.std(x, ddof=1) / math.sqrt(len(x))
    assert got.high - got.low == pytest.approx(expected, rel=0.1)


def test_bootstrap_chunks_large_samples() -> None:
    x = np.arange(300_000, dtype=float) % 7
    got = bootstrap_mean_ci(x, n_resamples=20)
    assert got.low <= got.estimate <= got.high


def test_bootstrap_edges() -> None:
    assert bootstrap_mean_ci([2.0, 2.0, 2.0]) == Interval(
        estimate=2.0, low=2.0, high=2.0, confidence=0.95
    )
    single = bootstrap_mean_ci([3.5])
    assert (single.low, single.high) == (3.5, 3.5)
    for bad in ([], [1.0, float("nan")]):
        got = bootstrap_mean_ci(bad)
        assert math.isnan(got.estimate) and math.isnan(got.low) and math.isnan(got.high)
    with pytest.raises(ConfigError, match="n_resamples"):
        bootstrap_mean_ci([1.0], n_resamples=0)


def test_interval_is_frozen() -> None:
    got = wilson_interval(1, 2)
    with pytest.raises(ValueError):
        got.low = 0.0  # type: ignore[misc]
    assert all(f.description for f in Interval.model_fields.values())
