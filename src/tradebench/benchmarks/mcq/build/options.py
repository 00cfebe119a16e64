"""Four options per question: seeded distractors, display formatting, the answer letter.

Numbers get a multiplicative ladder: the answer takes a uniformly drawn rank 0..3 and each
neighbouring gap is a factor 1 + g with g ~ U(0.08, 0.14), so every option is within a
factor 1.5 of the answer and the nearest distractor is about 10% away. Small integers (< 30)
use an additive step of max(1, round(10%)) with the rank drawn among the feasible ones (no
negative count). Dates pick three of the template's plausible candidates; choices are
shuffled. The order made here (ascending numbers, chronological dates) is provisional: the
builder then moves every key to a balanced letter and shuffles the distractors
(`balance.py`), so the final letter says nothing about the value's rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tradebench.benchmarks.mcq.build.templates.base import ACTION_LABELS, Answer, Instance

LETTERS = ("A", "B", "C", "D")
GAP_LOW, GAP_HIGH = 0.08, 0.14
SMALL_INT = 30


@dataclass(frozen=True)
class Options:
    """Four option texts in display order and the index of the correct one."""

    texts: tuple[str, str, str, str]
    correct: int

    @property
    def letter(self) -> str:
        """The correct letter, A-D."""
        return LETTERS[self.correct]


def format_value(answer: Answer, value: float | int | str) -> str:
    """Display text of one option value (thousands separators, fixed decimals, unit)."""
    if answer.kind == "number":
        return f"{float(value):,.{answer.decimals}f}{answer.unit}"
    if answer.kind == "integer":
        return f"{int(value):,}"
    return str(value)


def settle_decimals(instance: Instance) -> Instance:
    """Give a number answer at least three significant digits (more decimals if small).

    The question then says "Round to d decimals" with that d, so tiny ratios do not collapse
    into identical options.
    """
    answer = instance.answer
    if answer.kind != "number" or float(answer.value) == 0:
        return instance
    wanted = 2 - math.floor(math.log10(abs(float(answer.value))))
    if wanted <= answer.decimals:
        return instance
    return replace(instance, answer=replace(answer, decimals=wanted))


def _granularity(value: int) -> int:
    """The power of ten the answer is a multiple of, at most 10^(digits - 3)."""
    step = 1
    while value % (step * 10) == 0 and step * 10 <= 10 ** max(0, len(str(value)) - 3):
        step *= 10
    return step


def _ladder(value: float, rng: np.random.Generator) -> tuple[list[float], int]:
    rank = int(rng.integers(4))
    factors = 1.0 + rng.uniform(GAP_LOW, GAP_HIGH, size=3)
    steps = np.concatenate([[1.0], np.cumprod(factors)])
    values = [value * steps[k] / steps[rank] for k in range(4)]
    values[rank] = value
    order = sorted(range(4), key=lambda k: values[k])
    return [values[k] for k in order], order.index(rank)


def _small_int(value: int, rng: np.random.Generator) -> tuple[list[int], int]:
    step = max(1, round(value * 0.1))
    ranks = [r for r in range(4) if value - r * step >= 0]
    rank = ranks[int(rng.integers(len(ranks)))]
    return [value + (k - rank) * step for k in range(4)], rank


def _numeric(answer: Answer, rng: np.random.Generator) -> Options | str:
    if answer.kind == "integer" and int(answer.value) < SMALL_INT:
        if int(answer.value) <= 0:
            return "the answer is zero (a zero beside non-zero options is guessable)"
        values, rank = _small_int(int(answer.value), rng)
    else:
        if float(answer.value) == 0:
            return "the answer is zero (a zero beside non-zero options is guessable)"
        raw, rank = _ladder(float(answer.value), rng)
        if answer.kind == "integer":
            grain = _granularity(int(answer.value))
            values = [round(v / grain) * grain for v in raw]
        else:
            values = raw
        values[rank] = answer.value
    texts = tuple(format_value(answer, v) for v in values)
    if len(set(texts)) < 4:
        return "options collide at the display precision"
    return Options(texts, rank)  # type: ignore[arg-type]


def _dated(instance: Instance, rng: np.random.Generator) -> Options | str:
    pool = [c for c in instance.candidates if c != instance.answer.value][:6]
    if len(pool) < 3:
        return "fewer than three plausible distractor dates"
    chosen = [pool[i] for i in sorted(rng.choice(len(pool), size=3, replace=False).tolist())]
    texts = sorted([str(instance.answer.value), *chosen])
    return Options(tuple(texts), texts.index(str(instance.answer.value)))  # type: ignore[arg-type]


def _choice(answer: Answer, rng: np.random.Generator) -> Options:
    order = rng.permutation(len(ACTION_LABELS)).tolist()
    texts = tuple(ACTION_LABELS[i] for i in order)
    return Options(texts, texts.index(str(answer.value)))  # type: ignore[arg-type]


def make_options(instance: Instance, rng: np.random.Generator) -> Options | str:
    """Build the four options for an instance, or return why it cannot be asked honestly."""
    answer = instance.answer
    if answer.kind in ("number", "integer"):
        return _numeric(answer, rng)
    if answer.kind == "date":
        return _dated(instance, rng)
    return _choice(answer, rng)
