"""Measured properties of a built question set: distractor distances and answer positions.

Two positions are measured: the answer's letter (balanced by the builder, so it should be
flat) and the answer's rank among the sorted option values of numeric questions (what is
left for a solver to exploit once letters are balanced: e.g. small counts cannot put the
key at the top of the ladder when that would push a distractor below zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tradebench.benchmarks.mcq.build.jitter import SMALL_INT
from tradebench.benchmarks.mcq.records import MCQRecord


@dataclass(frozen=True)
class DistractorStats:
    """Nearest-distractor relative distance (numeric questions) and the answer-letter mix."""

    numeric: int
    nearest_p10: float
    nearest_median: float
    nearest_p90: float
    max_spread: float
    letters: dict[str, int]
    value_ranks: dict[str, int]
    jitter_n: int = 0
    """Distractors drawn by the paper's rule (numbers, and counts of 7 or more)."""
    jitter_mean: float = float("nan")
    jitter_min: float = float("nan")
    jitter_max: float = float("nan")


RANKS = ("lowest", "2nd", "3rd", "highest")


def _value(text: str) -> float:
    return float(text.rstrip("%").replace(",", ""))


def distractor_stats(records: Sequence[MCQRecord]) -> DistractorStats:
    """Measure |nearest distractor - answer| / |answer| over number and integer questions,
    the distance of every distractor drawn by the paper's 7-33% rule,
    the largest option/answer ratio, how often each letter is the answer and how often the
    answer is the lowest, 2nd, 3rd or highest option value."""
    nearest, spread, jitter = [], [], []
    ranks = dict.fromkeys(RANKS, 0)
    for r in records:
        if r.answer_kind not in ("number", "integer"):
            continue
        answer = _value(r.options[r.answer])
        others = [_value(t) for k, t in r.options.items() if k != r.answer]
        if r.answer_kind == "number" or answer >= SMALL_INT:
            jitter += [abs(o - answer) / abs(answer) for o in others]
        nearest.append(min(abs(o - answer) for o in others) / abs(answer))
        spread += [max(abs(o), abs(answer)) / min(abs(o), abs(answer)) for o in others if o]
        ranks[RANKS[sum(1 for o in others if o < answer)]] += 1
    letters = {k: sum(1 for r in records if r.answer == k) for k in ("A", "B", "C", "D")}
    if not nearest:
        nan = float("nan")
        return DistractorStats(0, nan, nan, nan, nan, letters, ranks)
    q10, q50, q90 = np.quantile(nearest, [0.1, 0.5, 0.9]).tolist()
    band = (float(np.mean(jitter)), min(jitter), max(jitter)) if jitter else (float("nan"),) * 3
    return DistractorStats(
        len(nearest), q10, q50, q90, max(spread), letters, ranks, len(jitter), *band
    )
