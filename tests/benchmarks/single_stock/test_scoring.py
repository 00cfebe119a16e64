"""Composite mapping edge cases, the raw metrics' conventions, and seeded properties."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tradebench.benchmarks.single_stock.scoring import (
    PathMetrics,
    annualized_volatility,
    composite,
    map_components,
    path_metrics,
    score_episode,
)
from tradebench.errors import ConfigError, DataError
from tradebench.metrics import max_drawdown, sharpe, total_return


def _metrics(cr: float = 0.0, s: float = 0.0, mdd: float = 0.0) -> PathMetrics:
    return PathMetrics(
        cum_return=cr,
        log_return=math.log1p(cr) if cr > -1 else -math.inf,
        sharpe=s,
        volatility=0.0,
        max_drawdown=mdd,
    )


@pytest.mark.parametrize(
    ("cr", "expected"),
    [(-1.0, 0.0), (-0.5, 0.25), (0.0, 0.5), (0.5, 0.75), (1.0, 1.0), (3.0, 1.0)],
)
def test_cum_return_component(cr: float, expected: float) -> None:
    assert map_components(_metrics(cr=cr), 1.0).cum_return == pytest.approx(expected)


@pytest.mark.parametrize(
    ("s", "expected"),
    [(-5.0, 0.0), (-1.0, 0.0), (0.0, 1 / 3), (0.5, 0.5), (2.0, 1.0), (7.0, 1.0), (math.nan, 1 / 3)],
)
def test_sharpe_component(s: float, expected: float) -> None:
    assert map_components(_metrics(s=s), 1.0).sharpe == pytest.approx(expected)


@pytest.mark.parametrize(("mdd", "expected"), [(0.0, 1.0), (0.25, 0.75), (1.0, 0.0), (1.5, 0.0)])
def test_stability_component(mdd: float, expected: float) -> None:
    assert map_components(_metrics(mdd=mdd), 1.0).stability == pytest.approx(expected)


def test_composite_is_the_mean_of_the_components() -> None:
    c = map_components(_metrics(cr=0.2, s=0.5, mdd=0.1), 0.8)
    assert composite(c) == pytest.approx((0.6 + 0.5 + 0.9 + 0.8) / 4)


def test_always_flat_scores_exactly() -> None:
    """Flat earns nothing: CR 0, Sharpe undefined (-> 1/3), no drawdown, full discipline."""
    scores = score_episode(np.zeros(10), np.full(10, 0.01), np.ones(10, dtype=bool))
    assert math.isnan(scores.strategy.sharpe)
    assert scores.strategy.cum_return == 0 and scores.strategy.max_drawdown == 0
    assert scores.composite == pytest.approx((0.5 + 1 / 3 + 1.0 + 1.0) / 4)


def test_every_reply_unreadable_scores_zero_discipline() -> None:
    scores = score_episode(np.zeros(4), np.full(4, 0.01), np.zeros(4, dtype=bool))
    assert scores.valid_steps == 0 and scores.components.discipline == 0
    assert scores.composite == pytest.approx((0.5 + 1 / 3 + 1.0) / 4)


def test_one_step_has_no_sharpe_or_volatility() -> None:
    m = path_metrics([0.02], 252)
    assert math.isnan(m.sharpe) and math.isnan(m.volatility)
    assert m.cum_return == pytest.approx(math.expm1(0.02))
    assert m.max_drawdown == 0.0


def test_raw_metrics_follow_the_metric_package() -> None:
    rng = np.random.RandomState(1337)
    earned = rng.normal(0.0005, 0.02, 60)
    m = path_metrics(earned, 252)
    wealth = np.exp(np.cumsum(earned))
    simple = np.expm1(earned)
    assert m.cum_return == pytest.approx(total_return(wealth, 1.0))
    assert m.log_return == pytest.approx(earned.sum())
    assert m.sharpe == pytest.approx(sharpe(simple, 252))
    assert m.volatility == pytest.approx(simple.std(ddof=1) * math.sqrt(252))
    assert m.max_drawdown == pytest.approx(max_drawdown(wealth, 1.0))


def test_components_stay_in_the_unit_interval() -> None:
    rng = np.random.RandomState(1337)
    for _ in range(200):
        n = rng.randint(1, 40)
        earned = rng.normal(0, rng.uniform(0.001, 0.3), n)
        valid = rng.rand(n) < rng.rand()
        s = score_episode(earned, earned, valid)
        values = s.components.model_dump().values()
        assert all(0.0 <= v <= 1.0 for v in values)
        assert 0.0 <= s.composite <= 1.0


def test_volatility_and_inputs() -> None:
    assert math.isnan(annualized_volatility([0.1], 252))
    assert annualized_volatility([0.01, -0.01], 4) == pytest.approx(
        np.std([0.01, -0.01], ddof=1) * 2
    )
    with pytest.raises(ConfigError):
        annualized_volatility([0.01, 0.02], 0)
    with pytest.raises(DataError):
        path_metrics([], 252)
