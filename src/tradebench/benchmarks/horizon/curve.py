"""Accuracy by month, the controls and the measured horizon (the change-point rule).

Rule (`measure`): over the curve's months in calendar order (months with questions, up to
the model's serving month), a month is *above chance* when its one-sided exact test against
chance (`stats.tail_p`) gives p < alpha. The first run of at-chance months is the first
`run` consecutive months not above chance (a shorter stretch reaching the last month also
counts). The measured horizon is the month before that run. It is kept only when the months
from the first up to it, pooled, are above chance at alpha / (number of curve months), a
Bonferroni bound over the candidate horizons: a guessing model then shows a horizon with
probability at most alpha. No run at all: the model is above chance through the last curve
month and the horizon is that month, marked `censored` (the truth may be later).

Uncertainty: the rule is re-applied to `BOOTSTRAP` resamples of each month's questions
(counts drawn Binomial(n, accuracy), seeded); the 5th and 95th percentiles of the resampled
horizon give its 90% interval, with the share of resamples that show no horizon.

Controls, each pooled and tested one-sided at alpha / 2 (Bonferroni over the two, so a
clean model is declared invalid with probability at most alpha): the blinded questions
(identities hidden) and the months after the serving month. Either above chance
invalidates the curve.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.horizon.stats import (
    DEFAULT_ALPHA,
    DEFAULT_LIFT,
    DEFAULT_POWER,
    poisson_binomial_pmf,
    power,
    tail_p,
)
from tradebench.metrics.stats import wilson_interval

HORIZON_VERSION = 1
BOOTSTRAP = 500
DEFAULT_RUN = 3


class MonthRow(BaseModel):
    """One month of the curve (or of a control)."""

    model_config = ConfigDict(
        frozen=True, use_attribute_docstrings=True, ser_json_inf_nan="constants"
    )

    month: str
    """`YYYY-MM`."""
    n: int
    """Questions asked."""
    correct: int
    """Answered correctly (an unparsed reply is wrong)."""
    accuracy: float
    """correct / n."""
    low: float
    """Wilson 95% interval, lower bound."""
    high: float
    """Wilson 95% interval, upper bound."""
    chance: float
    """Mean chance of the month's questions (the guessing line)."""
    p_value: float
    """One-sided exact test of accuracy > chance."""
    above: bool
    """p_value < alpha."""
    power: float
    """Power of this month's test to detect the design lift at alpha."""
    role: str
    """`curve` (up to the serving month) or `after_serving` (a control)."""


class Control(BaseModel):
    """A pooled control that must be at chance."""

    model_config = ConfigDict(
        frozen=True, use_attribute_docstrings=True, ser_json_inf_nan="constants"
    )

    name: str
    """`blinded` or `after_serving`."""
    n: int
    """Questions pooled (0: the control could not be run)."""
    correct: int
    """Correct answers."""
    accuracy: float
    """correct / n (NaN when n = 0)."""
    low: float
    """Wilson 95% lower bound."""
    high: float
    """Wilson 95% upper bound."""
    chance: float
    """Mean chance."""
    p_value: float
    """One-sided exact test of accuracy > chance (NaN when n = 0)."""
    above: bool
    """p_value < alpha / 2: the curve is invalid."""
    note: str
    """What the control is, or why it is missing."""


class Horizon(BaseModel):
    """`horizon.json` entry of one agent: the curve, the controls and the horizon."""

    model_config = ConfigDict(
        frozen=True, use_attribute_docstrings=True, ser_json_inf_nan="constants"
    )

    schema_version: int = HORIZON_VERSION
    """Version of this record."""
    agent: str
    """The spec's agent name."""
    months: list[MonthRow]
    """Bright questions per month (curve and after-serving months)."""
    blinded_months: list[MonthRow]
    """Blinded questions per month (empty when not run)."""
    controls: list[Control]
    """The blinded and after-serving controls."""
    valid: bool
    """No control is above chance."""
    horizon: str | None
    """Measured horizon month (`YYYY-MM`), None when no month before a run at chance."""
    censored: bool
    """Above chance through the last curve month: the horizon may be later."""
    horizon_low: str | None
    """5th percentile of the bootstrap horizons (None: no horizon there)."""
    horizon_high: str | None
    """95th percentile of the bootstrap horizons (None: no horizon there)."""
    no_horizon_share: float
    """Share of bootstrap resamples that show no horizon."""
    serving_date: str | None
    """Serving date of the model (months after it are a control), None when not given."""
    alpha: float
    """One-sided level of every test."""
    run: int
    """At-chance months that end the curve."""
    lift: float
    """Design lift for the power figures."""
    powered: bool
    """Every curve month reaches the target power for the design lift."""
    target_power: float
    """The power a month must reach."""


def month_rows(
    answers: pd.DataFrame, alpha: float, lift: float, role_of: dict[str, str]
) -> list[MonthRow]:
    """Per month: counts, Wilson interval, chance, exact one-sided p and power.

    `answers` has `month, chance, correct`; `role_of` maps a month to its role."""
    rows = []
    for month, group in answers.groupby("month", sort=True):
        chances = group["chance"].to_numpy(dtype=float)
        k, n = int(group["correct"].sum()), len(group)
        ci = wilson_interval(k, n)
        p = tail_p(k, chances)
        rows.append(
            MonthRow(
                month=str(month),
                n=n,
                correct=k,
                accuracy=k / n,
                low=ci.low,
                high=ci.high,
                chance=float(chances.mean()),
                p_value=p,
                above=p < alpha,
                power=power(chances, lift, alpha),
                role=role_of.get(str(month), "curve"),
            )
        )
    return rows


def control(name: str, answers: pd.DataFrame, alpha: float, note: str) -> Control:
    """A pooled control over `answers` (`chance, correct`)."""
    n = len(answers)
    if n == 0:
        nan = float("nan")
        return Control(name=name, n=0, correct=0, accuracy=nan, low=nan, high=nan,
                       chance=nan, p_value=nan, above=False, note=note)  # fmt: skip
    k = int(answers["correct"].sum())
    ci = wilson_interval(k, n)
    p = tail_p(k, answers["chance"].to_numpy(dtype=float))
    return Control(
        name=name, n=n, correct=k, accuracy=k / n, low=ci.low, high=ci.high,
        chance=float(answers["chance"].mean()), p_value=p, above=p < alpha, note=note,
    )  # fmt: skip


def change_point(above: Sequence[bool], run: int) -> int | None:
    """Index of the last month before the first run of `run` months not above chance (a
    shorter run reaching the end counts); len(above) - 1 when there is no such run; None
    when the run starts at the first month."""
    n = len(above)
    for i in range(n):
        stretch = above[i : i + run]
        if not any(stretch) and (len(stretch) == run or i + len(stretch) == n):
            return i - 1 if i > 0 else None
    return n - 1 if n else None


class _Pooled:
    """Pooled null tails of months 0..h, for the Bonferroni guard."""

    def __init__(self, chances: Sequence[np.ndarray]) -> None:
        self.tails = []
        pmf = np.ones(1)
        for c in chances:
            pmf = np.convolve(pmf, poisson_binomial_pmf(c))
            self.tails.append(np.cumsum(pmf[::-1])[::-1])

    def p(self, h: int, correct: int) -> float:
        tail = self.tails[h]
        return float(tail[correct]) if correct < len(tail) else 0.0


def _rule(
    correct: np.ndarray, month_tails: list[np.ndarray], pooled: _Pooled, alpha: float, run: int
) -> int | None:
    above = [
        float(t[k]) < alpha if k < len(t) else True
        for t, k in zip(month_tails, correct, strict=True)
    ]
    h = change_point(above, run)
    if h is None:
        return None
    guard = alpha / len(correct)
    return h if pooled.p(h, int(correct[: h + 1].sum())) < guard else None


def measure(
    months: list[MonthRow], chances: list[np.ndarray], alpha: float, run: int, seed: int = 0
) -> tuple[int | None, int | None, int | None, float]:
    """The rule on the curve months: (horizon index, 5% index, 95% index, share of
    bootstrap resamples with no horizon). Indices are into `months`."""
    if not months:
        return None, None, None, 1.0
    tails = [np.cumsum(poisson_binomial_pmf(c)[::-1])[::-1] for c in chances]
    pooled = _Pooled(chances)
    correct = np.array([m.correct for m in months])
    h = _rule(correct, tails, pooled, alpha, run)
    rng = np.random.default_rng(seed)
    n = np.array([m.n for m in months])
    draws = rng.binomial(n, correct / n, size=(BOOTSTRAP, len(months)))
    found = [_rule(d, tails, pooled, alpha, run) for d in draws]
    hs = np.array([-1 if x is None else x for x in found])
    none_share = float(np.mean(hs < 0))
    lo, hi = (int(v) for v in np.percentile(hs, [5, 95], method="nearest"))
    return h, (lo if lo >= 0 else None), (hi if hi >= 0 else None), none_share


def _month_of(rows: list[MonthRow], i: int | None) -> str | None:
    return None if i is None else rows[i].month


def analyse(
    agent: str,
    bright: pd.DataFrame,
    blinded: pd.DataFrame | None,
    serving_date: str | None,
    alpha: float = DEFAULT_ALPHA,
    run: int = DEFAULT_RUN,
    lift: float = DEFAULT_LIFT,
    target_power: float = DEFAULT_POWER,
) -> Horizon:
    """The horizon record of one agent from its answer tables (`month, chance, correct`)."""
    serving = pd.Period(serving_date, "M") if serving_date else None
    after = {
        str(m): "after_serving"
        for m in bright["month"].unique()
        if serving is not None and pd.Period(m, "M") > serving
    }
    rows = month_rows(bright, alpha, lift, after)
    curve = [r for r in rows if r.role == "curve"]
    chances = [
        bright.loc[bright["month"] == r.month, "chance"].to_numpy(dtype=float) for r in curve
    ]
    h, lo, hi, none_share = measure(curve, chances, alpha, run)
    blinded = blinded if blinded is not None else bright.iloc[0:0]
    level = alpha / 2  # two controls: a clean model is declared invalid w.p. <= alpha
    controls = [
        control("blinded", blinded, level,
                "the same questions with stocks, dates, month and price levels hidden"
                if len(blinded) else "not run: add `blinded` to the spec's masks"),
        control("after_serving", bright[bright["month"].isin(after)], level,
                f"months after the serving date {serving_date}" if after
                else "no month after the serving date in the data"
                if serving_date else "no serving date given (options.serving_dates)"),
    ]  # fmt: skip
    return Horizon(
        agent=agent,
        months=rows,
        blinded_months=month_rows(blinded, alpha, lift, {}) if len(blinded) else [],
        controls=controls,
        valid=not any(c.above for c in controls),
        horizon=_month_of(curve, h),
        censored=h is not None and h == len(curve) - 1,
        horizon_low=_month_of(curve, lo),
        horizon_high=_month_of(curve, hi),
        no_horizon_share=none_share,
        serving_date=serving_date,
        alpha=alpha,
        run=run,
        lift=lift,
        powered=bool(curve) and all(r.power >= target_power for r in curve),
        target_power=target_power,
    )
