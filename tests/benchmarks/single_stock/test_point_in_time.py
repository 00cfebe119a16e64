"""Point in time: the decision at day i's close sees data through day i and nothing later."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.benchmarks.single_stock.conftest import make_episode, task, write_long
from tradebench.benchmarks.single_stock.agents import StepDecision

CUTOFF = pd.Timestamp("2021-01-20")


@pytest.fixture(scope="module")
def real_and_noisy(shared_data: Path, tmp_path_factory: pytest.TempPathFactory):
    """The same bars twice; in the second, every bar after CUTOFF is random noise."""
    raw = pd.read_parquet(
        shared_data / "us" / "sp500_daily_adj_2005_2025.parquet",
        filters=[("symbol", "in", ["TSLA", "SPY"])],
    )
    raw["date"] = pd.to_datetime(raw["date"])
    raw = raw[(raw["date"] >= "2020-06-01") & (raw["date"] <= "2021-03-31")]
    noisy = raw.copy()
    later = noisy["date"] > CUTOFF
    rng = np.random.RandomState(1337)
    for col in ("open", "high", "low", "close"):
        noisy.loc[later, col] = noisy.loc[later, col] * rng.lognormal(0, 0.2, later.sum())
    noisy.loc[later, "volume"] = rng.randint(1, 10**9, later.sum()).astype(float)
    root = tmp_path_factory.mktemp("pit")
    return write_long(raw, root / "real"), write_long(noisy, root / "noisy")


def _episode_at(dataset: Path, steps: int, mask: str):
    episode = make_episode(dataset, task("TSLA", "2021-01-04", "2021-03-31", "adaptive"), 30, mask)
    for action in (["buy", "sell", "hold"] * 10)[:steps]:
        episode.apply(StepDecision(action=action))
    return episode


@pytest.mark.parametrize("mask", ["bright", "blinded"])
def test_future_noise_leaves_the_observation_unchanged(real_and_noisy, mask: str) -> None:
    real, noisy = real_and_noisy
    a, b = _episode_at(real, 0, mask), _episode_at(noisy, 0, mask)
    k = int(np.flatnonzero(a.plan.days == np.datetime64(CUTOFF.date()))[0])
    a, b = _episode_at(real, k, mask), _episode_at(noisy, k, mask)
    obs_a, obs_b = a.observation(), b.observation()
    assert obs_a == obs_b
    assert a.context() == b.context()
    # the last visible bar is the decision day itself (data through day i inclusive)
    assert obs_a.day == CUTOFF.date() and obs_a.bars[-1].day == CUTOFF.date()
    # one day later the noise is visible: the test can fail
    a.apply(StepDecision(action="hold"))
    b.apply(StepDecision(action="hold"))
    assert a.observation() != b.observation()


def test_settlement_uses_the_next_close(real_and_noisy) -> None:
    real, _ = real_and_noisy
    episode = _episode_at(real, 0, "bright")
    plan = episode.plan
    assert (plan.settle_days > plan.days).all()
    assert (plan.days[1:] == plan.settle_days[:-1]).all()
    obs = episode.observation()
    assert obs.bars[-1].close == pytest.approx(plan.prices[0])
