"""Persona logic: which stance a persona takes given the cumulative return so far.

`risk_seeking` and `risk_averse` are fixed stances. `adaptive` is risk-seeking while the
cumulative strategy return (known at the decision: every earlier position has settled)
is >= 0 and risk-averse once it is < 0; it switches back when the return recovers to >= 0.
"""

from __future__ import annotations

import math

from tradebench.benchmarks.single_stock.config import Persona, Stance


def active_stance(persona: Persona, cum_return: float) -> Stance:
    """The stance of `persona` at a decision whose cumulative return so far is `cum_return`.

    A NaN cumulative return (no settled data) counts as 0, i.e. risk-seeking for `adaptive`.
    """
    if persona == "adaptive":
        value = 0.0 if math.isnan(cum_return) else cum_return
        return "risk_seeking" if value >= 0 else "risk_averse"
    return persona


def stance_path(persona: Persona, cum_returns: list[float]) -> list[Stance]:
    """The stance at each decision for a sequence of cumulative returns (one per step)."""
    return [active_stance(persona, c) for c in cum_returns]
