"""Coverage by simulation: the intervals the board shows hold their nominal 95%.

Seeded and sized to run in seconds: the seed interval over 4,000 boards per n (Monte Carlo
standard error 0.34 points), the block bootstrap over 1,000 series per process and length
(standard error 0.7 points) with 250 resamples each. docs/statistics.md has the same
simulations at larger sizes and the stress cases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.signal import lfilter

from tradebench.inference import InferenceSettings, significance_ranks
from tradebench.leaderboard.stats import IntervalSettings, mean_interval
from tradebench.metrics.block_bootstrap import block_interval
from tradebench.metrics.stats import holm_adjust, paired_t

MU = 0.0005
"""True mean daily return of every simulated series."""


def ar1(rng: np.random.Generator, reps: int, days: int, phi: float = 0.1) -> np.ndarray:
    """AR(1) daily returns, stationary (burn-in 100 days), sd 1%."""
    e = rng.normal(0.0, 0.01 * np.sqrt(1 - phi**2), (reps, days + 100))
    return MU + lfilter([1.0], [1.0, -phi], e, axis=1)[:, 100:]


def garch(rng: np.random.Generator, reps: int, days: int) -> np.ndarray:
    """GARCH(1,1) daily returns (alpha 0.05, beta 0.90, about 1% sd), burn-in 200 days."""
    omega, alpha, beta = 5e-6, 0.05, 0.90
    z = rng.standard_normal((reps, days + 200))
    h = np.full(reps, omega / (1 - alpha - beta))
    out = np.empty_like(z)
    for t in range(z.shape[1]):
        out[:, t] = np.sqrt(h) * z[:, t]
        h = omega + alpha * out[:, t] ** 2 + beta * h
    return MU + out[:, 200:]


@pytest.mark.parametrize("n", [2, 3, 5, 10])
@pytest.mark.parametrize("method", ["t", "bootstrap"])
def test_seed_intervals_cover_95_percent(n: int, method: str) -> None:
    """The board's interval over n seeds (the default, and `--interval bootstrap`, which
    keeps Student t below 30 seeds) covers the true mean 93-97% of the time."""
    rng = np.random.default_rng(1337 + n)
    settings = IntervalSettings(method=method)
    reps = 4000
    values = rng.normal(0.02, 0.05, (reps, n))
    hits = 0
    for row in values:
        ci = mean_interval(row, settings)
        hits += ci.low <= 0.02 <= ci.high
    assert 0.93 <= hits / reps <= 0.97, hits / reps


def test_one_seed_never_gives_a_point_interval() -> None:
    ci = mean_interval([0.1], IntervalSettings())
    assert ci.n == 1 and np.isnan(ci.low) and np.isnan(ci.high)


@pytest.mark.parametrize("process", ["ar1", "garch"])
@pytest.mark.parametrize("days", [250, 548])
def test_block_bootstrap_of_the_mean_daily_return_covers_95_percent(
    process: str, days: int
) -> None:
    rng = np.random.default_rng(20260101 + days)
    series = (ar1 if process == "ar1" else garch)(rng, 1000, days)
    hits = 0
    for i, x in enumerate(series):
        ci = block_interval(x, "mean", resamples=250, seed=i)
        hits += ci.low <= MU <= ci.high
    assert 0.93 <= hits / len(series) <= 0.97, hits / len(series)


def test_six_equal_agents_are_ranked_apart_on_at_most_5_percent_of_boards() -> None:
    """Six equally skilled agents, 3 seeds, every pair compared by the paired t-test,
    Holm over the 15 comparisons, ranks from the adjusted p-values. Holm's family-wise
    error is at most 5% and close to it here (4.8% over 200,000 boards), so the estimate
    is over 40,000 boards (standard error 0.11 points)."""
    rng = np.random.default_rng(7)
    settings = InferenceSettings()
    boards, agents = 40_000, 6
    values = rng.normal(0.02, 0.05, (boards, 3, agents))
    a, b = np.triu_indices(agents, 1)
    diffs = values[:, :, a] - values[:, :, b]
    # the paired t-test of every pair, vectorised; checked against the board's own test
    t = diffs.mean(axis=1) / (diffs.std(axis=1, ddof=1) / np.sqrt(3))
    p = 2 * stats.t.sf(np.abs(t), 2)
    for k in range(20):
        assert p[k, 0] == pytest.approx(paired_t(diffs[k, :, 0]).p_value, rel=1e-9)
    adjusted = np.vstack([holm_adjust(row) for row in p])
    significant = adjusted < 1 - settings.confidence
    split = 0
    for k in range(boards):
        if k >= 2_000 and not significant[k].any():
            continue  # past the first 2,000 boards (all ranked), only those that can split
        table = pd.DataFrame(
            {
                "a": a,
                "b": b,
                "difference": diffs[k].mean(axis=0),
                "p_holm": adjusted[k],
                "significant": significant[k],
            }
        )
        ranks = significance_ranks(list(range(agents)), table)
        split += len(set(ranks.values())) > 1
    assert split / boards <= 0.05, split / boards
