"""Build modes, sizing, fills at the next open, option honesty, determinism."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from tradebench.benchmarks.mcq.build.backtest import run_backtest
from tradebench.benchmarks.mcq.build.builder import BuildResult, BuildSpec, build, strategy_config
from tradebench.benchmarks.mcq.build.stats import distractor_stats
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.check.series import Bars
from tradebench.benchmarks.mcq.config import Sizing
from tradebench.benchmarks.mcq.records import dumps_record, question_id


def _value(text: str) -> float:
    return float(text.rstrip("%").replace(",", ""))


def test_options_are_honest(base_pool: BuildResult) -> None:
    for r in base_pool.records:
        texts = list(r.options.values())
        assert len(set(texts)) == 4
        assert r.id == question_id(r.question, r.options)
        assert r.question.startswith("Backtest setup")
        if r.answer_kind in ("number", "integer"):
            answer = _value(r.options[r.answer])
            assert answer != 0, r.template
            others = [_value(t) for k, t in r.options.items() if k != r.answer]
            if r.answer_kind == "number" or answer >= 7:  # smaller counts: steps of 1
                # the paper's rule: 7-33% from the key, read off the option texts
                assert all(0.07 <= abs(o - answer) / abs(answer) <= 0.33 for o in others)
            else:  # four consecutive counts
                low = int(min(answer, *others))
                assert sorted([answer, *others]) == list(range(low, low + 4))
    stats = distractor_stats(base_pool.records)
    n = len(base_pool.records)
    assert set(stats.letters.values()) <= {n // 4, -(-n // 4)}  # balanced letters
    # the key's rank among the option values is spread too: no "pick the middle" rule
    assert min(stats.value_ranks.values()) >= stats.numeric // 6


def test_distractor_distances_follow_the_papers_distribution(base_pool: BuildResult) -> None:
    """Uniform on [7%, 33%] from the key: mean 20%, a quarter of the mass per 6.5 points."""
    distances = []
    for r in base_pool.records:
        if r.answer_kind not in ("number", "integer"):
            continue
        answer = _value(r.options[r.answer])
        if r.answer_kind == "number" or answer >= 7:
            distances += [
                abs(_value(t) - answer) / abs(answer) for k, t in r.options.items() if k != r.answer
            ]
    d = np.array(distances)
    assert len(d) >= 300
    assert 0.185 <= d.mean() <= 0.215, d.mean()
    quarters = np.histogram(d, bins=[0.07, 0.135, 0.20, 0.265, 0.33])[0] / len(d)
    assert np.all(np.abs(quarters - 0.25) < 0.06), quarters
    stats = distractor_stats(base_pool.records)
    assert stats.jitter_n == len(d) and abs(stats.jitter_mean - d.mean()) < 1e-12


def test_no_question_prints_its_answer(base_pool: BuildResult) -> None:
    for r in base_pool.records:
        question = r.question.split("Question:")[1]
        if r.answer_kind != "choice":  # as a token of its own, not a digit inside a date
            token = re.escape(r.options[r.answer])
            assert not re.search(rf"(?<![\d.,-]){token}(?![\d.,%-])", question), r.template


def test_first_buy_quotes_next_open_fill(aapl) -> None:
    ref, bars = aapl
    config = strategy_config(BuildSpec(data=ref, seed=42), "sma_cross")
    log = run_backtest(bars, config)
    first = log.fills.iloc[0]
    fill_pos = bars.index.get_loc(first["date"])
    assert first["price"] == bars["open"].iloc[fill_pos]
    signal_day = bars.index[fill_pos - 1]
    assert log.snapshots.loc[signal_day, "cross"] > 0


def test_stake_sizing_is_honoured_and_stated(aapl) -> None:
    ref, bars = aapl
    result = build(BuildSpec(data=ref, sizing=Sizing(kind="stake", stake=120), seed=5), bars)
    log = run_backtest(bars, result.records[0].config)
    assert set(log.fills["size"]) == {120}
    assert all("fixed 120 shares" in r.question for r in result.records)
    skipped = {s.template for s in result.skipped}
    assert "position_on_date" in skipped  # would repeat the stated stake
    assert "max_shares" not in skipped  # affordable shares do not depend on the sizer
    assert check_records(result.records, loader=lambda _: Bars.from_frame(bars)).ok


def test_sample_and_curated_modes(aapl) -> None:
    ref, bars = aapl
    hard = build(
        BuildSpec(data=ref, mode="sample", num_questions=25, difficulty="hard", seed=3), bars
    )
    assert len(hard.records) == 25
    assert {r.tier for r in hard.records} == {"hard"}
    assert len({r.id for r in hard.records}) == 25
    curated = build(BuildSpec(data=ref, mode="curated", seed=11), bars)
    tiers = [r.tier for r in curated.records]
    assert tiers == ["easy"] * 10 + ["medium"] * 10 + ["hard"] * 10
    per_strategy = np.unique([r.strategy for r in curated.records], return_counts=True)[1]
    assert per_strategy.min() >= 4
    assert check_records(hard.records + curated.records, loader=lambda _: Bars.from_frame(bars)).ok


def test_sampled_all_tiers_split_evenly_with_balanced_letters(aapl) -> None:
    """`--num-questions N --difficulty all`: tiers as even as N allows (paper's Appendix I)."""
    ref, bars = aapl
    for n, want in ((30, (10, 10, 10)), (31, (11, 10, 10)), (8, (3, 3, 2))):
        spec = BuildSpec(data=ref, mode="sample", num_questions=n, difficulty="all", seed=7)
        records = build(spec, bars).records
        got = tuple(sum(1 for r in records if r.tier == t) for t in ("easy", "medium", "hard"))
        assert got == want, (n, got)
        letters = [sum(1 for r in records if r.answer == k) for k in "ABCD"]
        assert set(letters) <= {n // 4, -(-n // 4)}, letters
        assert len({r.id for r in records}) == n


def test_same_seed_same_bytes_different_seed_different(aapl, base_pool: BuildResult) -> None:
    ref, bars = aapl
    again = build(BuildSpec(data=ref, seed=42), bars)
    assert [dumps_record(r) for r in again.records] == [dumps_record(r) for r in base_pool.records]
    other = build(BuildSpec(data=ref, seed=43), bars)
    assert {r.id for r in other.records} != {r.id for r in base_pool.records}


SCRIPT = """
import sys
from pathlib import Path
from tradebench.benchmarks.mcq.build.builder import BuildSpec
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.build.files import build_file
ref = DataRef.model_validate_json(sys.argv[1])
build_file(BuildSpec(data=ref, seed=42), Path(sys.argv[2]))
"""


def test_byte_identical_across_hash_seeds(make_ref, base_pool: BuildResult, tmp_path: Path) -> None:
    ref = make_ref()
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"q{hash_seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(
            [sys.executable, "-c", SCRIPT, ref.model_dump_json(), str(out)],
            env=env,
            check=True,
            timeout=300,
        )
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    in_process = "".join(dumps_record(r) + "\n" for r in base_pool.records).encode()
    assert outs[0] == in_process
    assert len(outs[0].splitlines()) >= 150
