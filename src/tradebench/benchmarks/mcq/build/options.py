"""Four options per question: seeded distractors, display formatting, the answer letter.

Numbers follow the paper's rule: each distractor is the key times a factor 1 +- d with d
drawn uniformly from [0.07, 0.33] (multiplicative 0.7-1.3 with jitter: 7-33% from the key,
20% on average); the key's rank among the four values is drawn uniformly and fixes how
many factors are below 1. A draw whose displayed value falls outside
that band after rounding, or collides with another option, is drawn again. Integers are
rounded to the answer's granularity (volumes stay multiples of 100); a count too small for
three distinct integers within 7-33% of it (below 7) uses an additive ladder of steps of 1
instead. Dates pick three of the template's plausible candidates; choices are shuffled.
The order made here (ascending numbers, chronological dates) is provisional: the builder
then moves every key to a balanced letter and shuffles the distractors (`balance.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from tradebench.benchmarks.mcq.build.jitter import (
    JITTER_HIGH,
    JITTER_LOW,
    MAX_DRAWS,
    SMALL_INT,
    display,
    relative_distance,
)
from tradebench.benchmarks.mcq.build.templates.base import ACTION_LABELS, Answer, Instance

LETTERS = ("A", "B", "C", "D")


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
    return display(answer.kind, value, answer.decimals, answer.unit)


def _shown(answer: Answer, value: float | int) -> float:
    """The value as its option text displays it."""
    return float(format_value(answer, value).rstrip(answer.unit).replace(",", ""))


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


def _jittered(answer: Answer, rng: np.random.Generator) -> list[float | int] | None:
    """Three distractors by the paper's rule, each within the band once displayed.

    The key's rank among the four values is drawn uniformly and that many distractors go
    below it (the rest above), so the rank tells nothing; with independent signs the key
    would be a middle value three times in four. A rank the band cannot fill (a count of 8
    has only two integers 7-33% below it) gives way to the other ranks in a seeded order.
    """
    for below in rng.permutation(4).tolist():
        picked = _side_draws(answer, rng, int(below))
        if picked is not None:
            return picked
    return None


def _side_draws(answer: Answer, rng: np.random.Generator, below: int) -> list[float | int] | None:
    """Three distractors in the band, the first `below` of them under the key."""
    key = float(answer.value)
    shown_key = _shown(answer, key)
    grain = _granularity(int(answer.value)) if answer.kind == "integer" else 1
    picked: list[float | int] = []
    texts = {format_value(answer, answer.value)}
    for _ in range(MAX_DRAWS):
        distance = rng.uniform(JITTER_LOW, JITTER_HIGH)
        lower = len(picked) < below
        value: float | int = key * (1.0 + (-distance if lower == (key > 0) else distance))
        if answer.kind == "integer":
            value = int(round(value / grain) * grain)
        text = format_value(answer, value)
        band = relative_distance(_shown(answer, value), shown_key)
        if text in texts or not JITTER_LOW <= band <= JITTER_HIGH:
            continue
        texts.add(text)
        picked.append(value)
        if len(picked) == 3:
            return picked
    return None


def _small_int(value: int, rng: np.random.Generator) -> tuple[list[int], int]:
    ranks = [r for r in range(4) if value - r >= 0]
    rank = ranks[int(rng.integers(len(ranks)))]
    return [value + (k - rank) for k in range(4)], rank


def _numeric(answer: Answer, rng: np.random.Generator) -> Options | str:
    if float(answer.value) == 0:
        return "the answer is zero (a zero beside non-zero options is guessable)"
    if answer.kind == "integer" and int(answer.value) < 0:
        return "a negative count"
    if answer.kind == "integer" and int(answer.value) < SMALL_INT:
        values, rank = _small_int(int(answer.value), rng)
    else:
        distractors = _jittered(answer, rng)
        if distractors is None:
            return "options collide at the display precision"
        values = sorted([answer.value, *distractors], key=float)
        rank = values.index(answer.value)
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


def _composite(instance: Instance, rng: np.random.Generator) -> Options | str:
    """Three of the template's alternative answers (real ones first, up to six)."""
    pool = [c for c in instance.candidates if c != instance.answer.value][:6]
    if len(pool) < 3:
        return "fewer than three distinct alternative answers"
    chosen = [pool[i] for i in sorted(rng.choice(len(pool), size=3, replace=False).tolist())]
    texts = sorted([str(instance.answer.value), *chosen])
    return Options(tuple(texts), texts.index(str(instance.answer.value)))  # type: ignore[arg-type]


def make_options(instance: Instance, rng: np.random.Generator) -> Options | str:
    """Build the four options for an instance, or return why it cannot be asked honestly."""
    answer = instance.answer
    if answer.kind in ("number", "integer"):
        return _numeric(answer, rng)
    if answer.kind == "date":
        return _dated(instance, rng)
    if answer.kind == "composite":
        return _composite(instance, rng)
    return _choice(answer, rng)
