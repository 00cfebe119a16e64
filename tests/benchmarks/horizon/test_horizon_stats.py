"""The exact tests, the power and the change-point rule against independent oracles:
scipy's binomial distribution, and seeded simulations of guessing and remembering models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, binomtest

from tradebench.benchmarks.horizon.benchmark import read_letter
from tradebench.benchmarks.horizon.curve import analyse, change_point
from tradebench.benchmarks.horizon.stats import power, questions_needed, tail_p


@pytest.mark.parametrize(
    ("k", "n", "p"), [(20, 60, 0.25), (0, 10, 0.5), (72, 72, 0.25), (40, 72, 0.5)]
)
def test_tail_equals_scipy_binomial_test_when_chances_agree(k: int, n: int, p: float) -> None:
    expected = binomtest(k, n, p, alternative="greater").pvalue
    assert tail_p(k, [p] * n) == pytest.approx(expected, rel=1e-9)


def test_mixed_chances_tail_matches_a_simulation() -> None:
    chances = [0.25, 0.5, 0.25] * 24
    rng = np.random.default_rng(1337)
    draws = (rng.random((200_000, len(chances))) < chances).sum(axis=1)
    for k in (24, 30, 34):
        assert tail_p(k, chances) == pytest.approx(np.mean(draws >= k), abs=3e-3)


def test_power_and_default_size_against_scipy() -> None:
    n, p0, lift = 68, 0.25, 0.15
    crit = next(k for k in range(n + 1) if binom.sf(k - 1, n, p0) <= 0.05)
    assert power([p0] * n, lift) == pytest.approx(binom.sf(crit - 1, n, p0 + lift))
    row = questions_needed([0.25, 0.5, 0.25, 0.25])
    assert row.questions <= 72 and row.power >= 0.8  # the default of 72 is enough
    assert questions_needed([0.25], lift=0.15).questions == 68


def test_change_point_rule_cases() -> None:
    t, f = True, False
    assert change_point([t, t, t, f, f, f, f], 3) == 2
    assert change_point([t, f, t, t, f, f, f], 3) == 3  # one at-chance month is not a run
    assert change_point([f, f, f, t, t], 3) is None  # the run starts at the first month
    assert change_point([t, t, t, t, f, f], 3) == 3  # a shorter run reaching the end
    assert change_point([t, t, t], 3) == 2  # no run: censored at the last month


def _answers(rng: np.random.Generator, months: list[str], know: set[str]) -> pd.DataFrame:
    chance = np.tile([0.25, 0.5, 0.25], 24)
    rows = []
    for m in months:
        right = np.ones(72, bool) if m in know else rng.random(72) < chance
        rows.append(pd.DataFrame({"month": m, "chance": chance, "correct": right}))
    return pd.concat(rows, ignore_index=True)


def test_guessing_models_rarely_show_a_horizon() -> None:
    months = [str(p) for p in pd.period_range("2019-01", "2023-12", freq="M")]
    found = 0
    for seed in range(40):
        h = analyse("g", _answers(np.random.default_rng(seed), months, set()), None, None)
        found += h.horizon is not None
    assert found <= 2  # at most alpha (5%) by the Bonferroni guard; here none are expected


def test_remembering_models_horizon_within_a_month() -> None:
    months = [str(p) for p in pd.period_range("2019-01", "2023-12", freq="M")]
    for seed, last in enumerate(["2019-04", "2021-07", "2023-02"]):
        know = {m for m in months if m <= last}
        h = analyse("r", _answers(np.random.default_rng(seed), months, know), None, None)
        assert h.horizon == last and h.horizon_low == last
        assert h.horizon_high >= last and not h.censored


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("A. SZ002916 (深南", "A"), ("(C) 17.57", "C"), ("Answer: D", "D"), ("B", "B"),
     ("**B**", "B"), ("Apple rose", None), ("I think", None), ("AB", None)],
)  # fmt: skip
def test_replies_are_read_as_letters(reply: str, letter: str | None) -> None:
    assert read_letter(reply) == letter
