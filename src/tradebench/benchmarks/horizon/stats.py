"""Tests and power of a month's accuracy against chance when questions differ in chance.

A month mixes four-option questions (chance 1/4) and two-option ones (chance 1/2), so the
number correct under guessing is Poisson-binomial, not binomial. `tail_p` is its exact
one-sided tail; with one chance for every question it is the binomial test of
`scipy.stats.binomtest` (`alternative="greater"`). Wilson intervals come from
`tradebench.metrics.stats.wilson_interval`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

DEFAULT_ALPHA = 0.05
DEFAULT_POWER = 0.80
DEFAULT_LIFT = 0.15
"""The lift over chance the default number of questions per month is sized to detect."""


def poisson_binomial_pmf(probs: Sequence[float]) -> np.ndarray:
    """P(X = k), k = 0..n, for X the number of successes of independent Bernoulli(p_i)."""
    pmf = np.ones(1)
    for p in probs:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


def tail_p(correct: int, chances: Sequence[float]) -> float:
    """One-sided p-value P(X >= correct) when every question is answered at its chance.

    NaN when there are no questions (too-short input by contract)."""
    if len(chances) == 0:
        return float("nan")
    pmf = poisson_binomial_pmf(chances)
    return float(min(1.0, pmf[int(correct) :].sum()))


def critical_count(chances: Sequence[float], alpha: float = DEFAULT_ALPHA) -> int:
    """Smallest count k with P(X >= k) <= alpha under chance (n + 1 when none is)."""
    tails = np.cumsum(poisson_binomial_pmf(chances)[::-1])[::-1]
    hits = np.nonzero(tails <= alpha)[0]
    return int(hits[0]) if len(hits) else len(chances) + 1


def power(chances: Sequence[float], lift: float, alpha: float = DEFAULT_ALPHA) -> float:
    """Probability that the one-sided test at `alpha` rejects chance when every question is
    answered correctly with probability min(1, chance + lift)."""
    k = critical_count(chances, alpha)
    lifted = [min(1.0, c + lift) for c in chances]
    return float(poisson_binomial_pmf(lifted)[k:].sum())


class PowerRow(BaseModel):
    """Questions per month needed to detect one lift."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    lift: float
    """Accuracy above chance to detect (0.15 = +15 points)."""
    questions: int
    """Smallest questions per month reaching the target power (-1: none up to the cap)."""
    power: float
    """Power reached with that many questions."""


def questions_needed(
    mix: Sequence[float],
    lift: float = DEFAULT_LIFT,
    target: float = DEFAULT_POWER,
    alpha: float = DEFAULT_ALPHA,
    cap: int = 2000,
) -> PowerRow:
    """Smallest n whose month (questions cycling through the chances in `mix`) detects
    `lift` with probability >= `target` at one-sided level `alpha`.

    The exact power is not monotone in n (the critical count moves in steps), so the
    answer is the smallest n from which every n up to 20 more also reaches the target."""
    reached: list[int] = []
    n = 1
    while n <= cap:
        chances = [mix[i % len(mix)] for i in range(n)]
        if power(chances, lift, alpha) >= target:
            reached.append(n)
            if len(reached) > 20 and reached[-21] == n - 20:
                first = reached[-21]
                at = [mix[i % len(mix)] for i in range(first)]
                return PowerRow(lift=lift, questions=first, power=power(at, lift, alpha))
        n += 1
    return PowerRow(lift=lift, questions=-1, power=float("nan"))


def power_table(
    mix: Sequence[float],
    lifts: Sequence[float] = (0.05, 0.10, 0.15, 0.20, 0.30),
    target: float = DEFAULT_POWER,
    alpha: float = DEFAULT_ALPHA,
) -> list[PowerRow]:
    """`questions_needed` for each lift."""
    return [questions_needed(mix, lift, target, alpha) for lift in lifts]
