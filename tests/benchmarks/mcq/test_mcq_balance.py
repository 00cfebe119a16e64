"""Answer letters are balanced in every build mode, for every seed, and keys stay correct.

The property test builds 200 seeds of the curated set and of the all-templates base pool
(plus 50 sampled sets) on the real AAPL bars; one `BacktestCache` shares the backtests
across seeds (the seed only picks among grid configs), so it runs in seconds.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tradebench.benchmarks.mcq.build.balance import balance_letters, letter_targets
from tradebench.benchmarks.mcq.build.builder import BacktestCache, BuildResult, BuildSpec, build
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.check.series import Bars
from tradebench.benchmarks.mcq.records import MCQRecord, question_id
from tradebench.errors import ConfigError


def _spread(records: tuple[MCQRecord, ...] | list[MCQRecord]) -> tuple[int, int]:
    counts = Counter(r.answer for r in records)
    values = [counts.get(letter, 0) for letter in "ABCD"]
    return min(values), max(values)


@pytest.fixture(scope="module")
def cache(aapl) -> BacktestCache:
    return BacktestCache(aapl[1])


@pytest.mark.parametrize("mode", ["curated", "all_templates"])
def test_letters_balanced_over_200_seeds(aapl, cache: BacktestCache, mode: str) -> None:
    ref, bars = aapl
    for seed in range(200):
        result = build(BuildSpec(data=ref, mode=mode, seed=seed), bars, cache=cache)
        n = len(result.records)
        if mode == "curated":
            assert n == 30, seed
        low, high = _spread(result.records)
        assert (low, high) in ((n // 4, n // 4), (n // 4, n // 4 + 1)), (seed, low, high)
        for r in result.records:
            assert len(set(r.options.values())) == 4 and r.id == question_id(r.question, r.options)


def test_sampled_sets_are_balanced_too(aapl, cache: BacktestCache) -> None:
    ref, bars = aapl
    for seed in range(50):
        spec = BuildSpec(data=ref, mode="sample", num_questions=13 + seed % 7, seed=seed)
        result = build(spec, bars, cache=cache)
        low, high = _spread(result.records)
        assert high - low <= 1, seed


def test_balancing_keeps_each_key_and_its_distractors(base_pool: BuildResult) -> None:
    records = list(base_pool.records)
    for seed in range(20):
        moved = balance_letters(records, np.random.default_rng(seed))
        assert _spread(moved)[1] - _spread(moved)[0] <= 1
        for before, after in zip(records, moved, strict=True):
            assert after.question == before.question
            assert after.options[after.answer] == before.options[before.answer]
            assert sorted(after.options.values()) == sorted(before.options.values())
            assert after.id == question_id(after.question, after.options)
        again = balance_letters(records, np.random.default_rng(seed))
        assert again == moved  # deterministic for a seed


def test_every_prefix_is_balanced() -> None:
    for seed in range(30):
        targets = letter_targets(203, np.random.default_rng(seed))
        for n in range(1, len(targets) + 1):
            counts = Counter(targets[:n])
            assert max(counts.values()) - min(counts.get(k, 0) for k in "ABCD") <= 1


def test_balanced_sets_still_check(aapl) -> None:
    ref, bars = aapl
    records: list[MCQRecord] = []
    for seed in (1, 2, 3):
        records += build(BuildSpec(data=ref, mode="curated", seed=seed), bars).records
    report = check_records(records, loader=lambda _: Bars.from_frame(bars))
    assert report.ok, report.failures


def test_a_cache_serves_only_its_own_bars(aapl, cache: BacktestCache) -> None:
    ref, bars = aapl
    with pytest.raises(ConfigError, match="only the bars"):
        build(BuildSpec(data=ref, seed=0), bars.copy(), cache=cache)
