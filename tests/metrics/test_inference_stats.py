"""The tests and intervals behind the board, each against an independent computation
(scipy's own tests, formulas written out here, published values)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.errors import ConfigError, DataError
from tradebench.metrics.block_bootstrap import (
    block_interval,
    block_rule,
    paired_block_difference,
    stationary_indices,
)
from tradebench.metrics.power import (
    days_for_sharpe,
    mde_daily_return,
    mde_seed_mean,
    mde_sharpe,
    seeds_needed,
)
from tradebench.metrics.sharpe_inference import (
    deflated_sharpe,
    expected_max_sharpe,
    probabilistic_sharpe,
    sharpe_difference,
)
from tradebench.metrics.stats import (
    binomial_greater,
    holm_adjust,
    mcnemar_exact,
    paired_t,
    t_interval,
)

runner = CliRunner()


def test_paired_t_is_scipys_paired_test() -> None:
    rng = np.random.RandomState(1337)
    a, b = rng.normal(0.01, 0.02, 7), rng.normal(0.0, 0.02, 7)
    got = paired_t(a - b)
    want = stats.ttest_rel(a, b)
    lo, hi = want.confidence_interval(0.95)
    assert got.p_value == pytest.approx(want.pvalue, rel=1e-12)
    assert (got.low, got.high) == pytest.approx((lo, hi), rel=1e-12)
    flat = paired_t([0.1, 0.1, 0.1])  # no spread: no test, never a point interval
    assert math.isnan(flat.p_value) and math.isnan(flat.low)
    assert math.isnan(t_interval([0.3]).low) and t_interval([0.3]).estimate == 0.3


def test_holm_by_hand() -> None:
    p = [0.01, 0.04, 0.03, float("nan"), 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 (m = 4): 0.02, 0.03, 0.06, 0.06 (running max)
    got = holm_adjust(p)
    np.testing.assert_allclose(got[[4, 0, 2, 1]], [0.02, 0.03, 0.06, 0.06])
    assert math.isnan(got[3])
    assert holm_adjust([0.5, 0.9]).tolist() == [1.0, 1.0]


def test_binomial_and_mcnemar_are_the_exact_binomial_tests() -> None:
    assert binomial_greater(7, 20, 0.2) == pytest.approx(
        stats.binomtest(7, 20, 0.2, alternative="greater").pvalue, rel=1e-12
    )
    assert mcnemar_exact(9, 2) == pytest.approx(stats.binomtest(2, 11, 0.5).pvalue, rel=1e-12)
    assert mcnemar_exact(0, 0) == 1.0
    with pytest.raises(DataError):
        binomial_greater(5, 3, 0.5)


def test_jkm_sharpe_difference_by_hand() -> None:
    rng = np.random.RandomState(1337)
    a = rng.normal(0.001, 0.01, 300)
    b = 0.6 * a + rng.normal(0.0, 0.008, 300)
    sa, sb = a.mean() / a.std(ddof=1), b.mean() / b.std(ddof=1)
    rho = np.corrcoef(a, b)[0, 1]
    v = (2 * (1 - rho) + 0.5 * (sa**2 + sb**2 - 2 * sa * sb * rho**2)) / 300
    got = sharpe_difference(a, b)
    assert got.z == pytest.approx((sa - sb) / math.sqrt(v), rel=1e-12)
    assert got.p_value == pytest.approx(2 * stats.norm.sf(abs(got.z)), rel=1e-12)


def test_probabilistic_and_deflated_sharpe_by_hand() -> None:
    rng = np.random.RandomState(1337)
    r = rng.standard_t(5, 500) * 0.01 + 0.0008
    sr = r.mean() / r.std(ddof=1)
    g3, g4 = stats.skew(r), stats.kurtosis(r, fisher=False)
    psr = stats.norm.cdf(sr * math.sqrt(499) / math.sqrt(1 - g3 * sr + (g4 - 1) / 4 * sr**2))
    assert probabilistic_sharpe(r) == pytest.approx(psr, rel=1e-12)
    # 10 trials, per-period Sharpe variance 0.001: E[max] from Bailey & Lopez de Prado
    e = 0.5772156649015329
    best = math.sqrt(0.001) * (
        (1 - e) * stats.norm.ppf(0.9) + e * stats.norm.ppf(1 - 1 / (10 * math.e))
    )
    assert expected_max_sharpe(10, 0.001) == pytest.approx(best, rel=1e-12)
    assert deflated_sharpe(r, 10, 0.001) < probabilistic_sharpe(r)
    assert deflated_sharpe(r, 1, 0.001) == probabilistic_sharpe(r)


def test_stationary_bootstrap_blocks_are_geometric_runs_of_days() -> None:
    idx = stationary_indices(50, 5.0, 4000, np.random.default_rng(0))
    steps = np.diff(idx, axis=1) % 50
    continued = steps == 1
    # a new block starts with probability 1/5 (and may land on the next day by chance)
    assert continued.mean() == pytest.approx(0.8 + 0.2 / 50, abs=0.005)
    assert idx.min() == 0 and idx.max() == 49


def test_block_rule_picks_longer_blocks_for_dependent_series() -> None:
    rng = np.random.default_rng(5)
    iid = rng.normal(size=1000)
    ar = np.empty(1000)
    ar[0] = 0.0
    for t in range(1, 1000):
        ar[t] = 0.6 * ar[t - 1] + iid[t]
    assert block_rule(iid).block < 2.5 < block_rule(ar).block
    assert block_rule(ar).scale > 1.0
    assert block_rule([1.0] * 20).block == 1.0


def test_block_interval_statistics_match_their_definitions() -> None:
    rng = np.random.default_rng(3)
    r = rng.normal(0.001, 0.01, (120, 3))
    bench = rng.normal(0.0, 0.01, 120)
    tr = block_interval(r, "total_return")
    assert tr.estimate == pytest.approx(np.mean(np.prod(1 + r, axis=0) - 1), rel=1e-12)
    sr = block_interval(r, "sharpe")
    assert sr.estimate == pytest.approx(
        np.mean(r.mean(axis=0) / r.std(axis=0, ddof=1) * math.sqrt(252)), rel=1e-12
    )
    active = r - bench[:, None]
    ir = block_interval(r, "information_ratio", benchmark=bench)
    assert ir.estimate == pytest.approx(
        np.mean(active.mean(axis=0) / active.std(axis=0, ddof=1) * math.sqrt(252)), rel=1e-12
    )
    for ci in (tr, sr, ir):
        assert ci.low < ci.estimate < ci.high
    same = paired_block_difference(r, r, "total_return")
    assert same.estimate == 0.0 and same.low == same.high == 0.0
    assert math.isnan(block_interval(r[:5], "mean").low)  # too few days: no interval
    with pytest.raises(ConfigError):
        block_interval(r, "information_ratio")


def test_power_formulas_by_hand() -> None:
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert mde_daily_return(0.01, 100) == pytest.approx(z * 0.01 / 10 * 252)
    assert mde_sharpe(252, 0.5) == pytest.approx(z * math.sqrt(2 * 0.5 / 252) * math.sqrt(252))
    assert days_for_sharpe(0.5, 0.5) == math.ceil(2 * 0.5 * 252 * (z / 0.5) ** 2)
    t = stats.t
    assert mde_seed_mean(0.02, 5) == pytest.approx(
        (t.ppf(0.975, 4) + t.ppf(0.8, 4)) * 0.02 / math.sqrt(5)
    )
    n = seeds_needed(0.02, 0.02)
    assert mde_seed_mean(0.02, n) <= 0.02 < mde_seed_mean(0.02, n - 1)
    assert math.isnan(mde_seed_mean(0.02, 1))


def test_plan_prints_the_minimum_detectable_effects_of_the_example() -> None:
    result = runner.invoke(
        app,
        ["plan", "examples/portfolio_baselines.yaml", "--daily-sd", "0.01", "--target-sharpe", "1"],
    )
    assert result.exit_code == 0, result.output
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    days = 21  # 2022-03-01 .. 2022-03-29, weekdays
    text = " ".join(result.output.split())
    assert f"{100 * z * 0.01 / math.sqrt(days) * 252:.2f}%" in text
    assert f"{z * math.sqrt(2 * 0.5 / days) * math.sqrt(252):.2f}" in text
    assert str(math.ceil(2 * 0.5 * 252 * z**2)) in text
    bad = runner.invoke(app, ["plan", "examples/portfolio_baselines.yaml", "--power", "1.5"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output


def test_seeds_pair_across_runs_whatever_their_dtype() -> None:
    """A run whose summary has the index's missing seed stores seeds as floats: seed 1.0 of
    one run is seed 1 of another."""
    from tradebench.inference import InferenceSettings, compare_rows

    def episodes(seeds: list, values: list[float]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "seed": pd.Series(seeds),
                "n_steps": 20,
                "value": values,
                "index_value": np.nan,
                "returns": None,
                "index_returns": None,
            }
        )

    a = episodes([0, 1, 2], [0.03, 0.01, 0.05])
    b = episodes([0.0, 1.0, 2.0], [0.01, 0.02, 0.02])
    got = compare_rows(a, b, "total_return", InferenceSettings())
    assert got["pairs"] == 3 and got["difference"] == pytest.approx(0.04 / 3)
    # the same agent from both runs: three seeds, each averaged over its two episodes
    from tradebench.inference import per_seed

    both = pd.concat([a, b], ignore_index=True)
    both["seed"] = pd.Series([0, 1, 2, 0.0, 1.0, 2.0], dtype=object)  # as read, unconverted
    pooled = per_seed(both)
    assert len(pooled) == 3
    assert pooled["value"].tolist() == pytest.approx([0.02, 0.015, 0.035])
    assert got["seeds_p"] == pytest.approx(
        stats.ttest_rel([0.03, 0.01, 0.05], [0.01, 0.02, 0.02]).pvalue
    )
