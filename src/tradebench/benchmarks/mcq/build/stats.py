"""Measured properties of a built question set: distractor distances and answer positions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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


def _value(text: str) -> float:
    return float(text.rstrip("%").replace(",", ""))


def distractor_stats(records: Sequence[MCQRecord]) -> DistractorStats:
    """Measure |nearest distractor - answer| / |answer| over number and integer questions,
    the largest option/answer ratio, and how often each letter is the answer."""
    nearest, spread = [], []
    for r in records:
        if r.answer_kind not in ("number", "integer"):
            continue
        answer = _value(r.options[r.answer])
        others = [_value(t) for k, t in r.options.items() if k != r.answer]
        nearest.append(min(abs(o - answer) for o in others) / abs(answer))
        spread.append(max(max(abs(o), abs(answer)) / min(abs(o), abs(answer)) for o in others))
    letters = {k: sum(1 for r in records if r.answer == k) for k in ("A", "B", "C", "D")}
    if not nearest:
        return DistractorStats(0, float("nan"), float("nan"), float("nan"), float("nan"), letters)
    q10, q50, q90 = np.quantile(nearest, [0.1, 0.5, 0.9]).tolist()
    return DistractorStats(len(nearest), q10, q50, q90, max(spread), letters)
