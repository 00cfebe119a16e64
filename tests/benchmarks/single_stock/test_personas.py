"""Persona stances: the adaptive switch on a constructed price path, end to end."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.benchmarks.single_stock.conftest import constructed_bars, make_episode, task, write_long
from tradebench.benchmarks.single_stock.agents import StepDecision
from tradebench.benchmarks.single_stock.personas import active_stance

# decision closes; the last close only settles the final decision
PATH = [100.0, 104.0, 106.0, 98.0, 95.0, 101.0, 110.0, 112.0]
# always long: cumulative return before decision j is PATH[j] / PATH[0] - 1
# -> 0, +4%, +6%, -2%, -5%, +1%, +10%
ADAPTIVE = ["risk_seeking"] * 3 + ["risk_averse"] * 2 + ["risk_seeking"] * 2


@pytest.fixture(scope="module")
def constructed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    frame = constructed_bars(PATH)
    out = write_long(frame, tmp_path_factory.mktemp("persona") / "aaa")
    days = frame["date"].dt.date.astype(str).tolist()
    return out, days[25], days[-1]


def _run_always_long(dataset: Path, start: str, end: str, persona: str):
    episode = make_episode(dataset, task("AAA", start, end, persona), len(PATH) - 1)
    users = []
    while not episode.done:
        users.append(episode.context().user)
        episode.apply(StepDecision(action="buy", sent="buy"))
    return episode.series(), users


def test_adaptive_switches_on_the_sign_of_the_cumulative_return(constructed) -> None:
    series, users = _run_always_long(*constructed, "adaptive")
    assert series["stance"].tolist() == ADAPTIVE
    for stance, text in zip(ADAPTIVE, users, strict=True):
        sign = ">= 0" if stance == "risk_seeking" else "< 0"
        label = stance.replace("_", "-")
        assert f"Stance today: {label} (adaptive persona: cumulative return {sign})" in text
    # the cumulative return shown is the settled one before each decision
    assert "Cumulative strategy return: -2.00%" in users[3]
    assert "Cumulative strategy return: +1.00%" in users[5]


@pytest.mark.parametrize("persona", ["risk_seeking", "risk_averse"])
def test_fixed_personas_never_switch(constructed, persona: str) -> None:
    series, users = _run_always_long(*constructed, persona)
    assert set(series["stance"]) == {persona}
    assert all(f"{persona.replace('_', '-')} (your persona)" in u for u in users)


def test_active_stance_boundaries() -> None:
    assert active_stance("adaptive", 0.0) == "risk_seeking"
    assert active_stance("adaptive", -1e-12) == "risk_averse"
    assert active_stance("adaptive", math.nan) == "risk_seeking"
    assert active_stance("risk_averse", 5.0) == "risk_averse"
    assert active_stance("risk_seeking", -0.9) == "risk_seeking"
