"""Re-derivations of the hard (risk and performance) templates, by explicit loops."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tradebench.benchmarks.mcq.check.derive import YEAR, Value, bar, deriver
from tradebench.benchmarks.mcq.check.simulate import Simulation


@dataclass(frozen=True)
class Episode:
    """The deepest drawdown: fraction lost, peak/trough bars, first recovered bar or -1."""

    depth: float
    peak_t: int
    trough_t: int
    recovered_t: int


def deepest(values: np.ndarray) -> Episode:
    """Walk the values once, keeping the running peak and its latest bar."""
    peak, peak_t = -math.inf, 0
    best = Episode(0.0, 0, 0, -1)
    for t, v in enumerate(values.tolist()):
        if v >= peak:
            peak, peak_t = v, t
        loss = (peak - v) / peak
        if loss > best.depth:
            best = Episode(loss, peak_t, t, -1)
    target = values[best.peak_t]
    for t in range(best.trough_t + 1, len(values)):
        if values[t] >= target:
            return Episode(best.depth, best.peak_t, best.trough_t, t)
    return best


def _ratio(sim: Simulation) -> float:
    return float(sim.value[-1]) / sim.initial_cash


def _annual(sim: Simulation) -> float:
    return math.exp(math.log(_ratio(sim)) * YEAR / len(sim.value)) - 1.0


@deriver
def max_drawdown(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `max_drawdown` from the simulation (definition in docs/mcq.md): in money
    for records that say so (`params["in"] == "money"`), else the earlier percent form."""
    if params.get("in") == "money":
        peak, worst = -math.inf, 0.0
        for v in sim.value.tolist():
            peak = max(peak, v)
            worst = max(worst, peak - v)
        return worst
    return deepest(sim.value).depth * 100.0


@deriver
def roi_percentage(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `roi_percentage` from the simulation (definition in docs/mcq.md)."""
    return (_ratio(sim) - 1.0) * 100.0


@deriver
def win_rate(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `win_rate` from the simulation (definition in docs/mcq.md)."""
    wins = sum(1 for trip in sim.trips if trip.net > 0)
    return 100.0 * wins / len(sim.trips)


@deriver
def profit_factor(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `profit_factor` from the simulation (definition in docs/mcq.md)."""
    gains = math.fsum(t.net for t in sim.trips if t.net > 0)
    losses = math.fsum(-t.net for t in sim.trips if t.net < 0)
    return gains / losses


@deriver
def annualized_return(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `annualized_return` from the simulation (definition in docs/mcq.md)."""
    return _annual(sim) * 100.0


@deriver
def avg_holding_period(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `avg_holding_period` from the simulation (definition in docs/mcq.md)."""
    return math.fsum(t.exit_t - t.entry_t for t in sim.trips) / len(sim.trips)


@deriver
def golden_cross_count(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `golden_cross_count` over bars start..end (definition in docs/mcq.md)."""
    first, last = bar(sim, {"date": params["start"]}), bar(sim, {"date": params["end"]})
    cross = sim.rules.lines["cross"]
    return sum(1 for t in range(first, last + 1) if cross[t] == 1.0)


@deriver
def max_drawdown_window(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `max_drawdown_window` from the simulation (definition in docs/mcq.md)."""
    ep = deepest(sim.value)
    return ep.trough_t - ep.peak_t


@deriver
def drawdown_recovery_days(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `drawdown_recovery_days` from the simulation (definition in docs/mcq.md)."""
    ep = deepest(sim.value)
    if ep.recovered_t < 0:
        raise ValueError("the deepest drawdown never recovers in the re-run")
    return ep.recovered_t - ep.trough_t


@deriver
def calmar_ratio(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `calmar_ratio` from the simulation (definition in docs/mcq.md)."""
    return _annual(sim) / deepest(sim.value).depth


@deriver
def exposure_adjusted_return(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `exposure_adjusted_return` from the simulation (definition in docs/mcq.md)."""
    exposure = np.count_nonzero(sim.position) / len(sim.position)
    return (_ratio(sim) - 1.0) * 100.0 / exposure
