"""Re-derivations of the multi-part templates (answers asked as "N shares at P on D").

Each returns a tuple, one value per slot of the record's form; `check.judge` reads every
option back into its parts and compares part by part. Records whose answer is a single
value (before these templates asked what the paper asks) still use the single-value
derivations in `derive.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tradebench.benchmarks.mcq.check.derive import day
from tradebench.benchmarks.mcq.check.simulate import Simulation

Parts = tuple[float | int | str, ...]
PartsDeriver = Callable[[Simulation, dict[str, Any]], Parts]
COMPOSITE: dict[str, PartsDeriver] = {}


def composite_deriver(fn: PartsDeriver) -> PartsDeriver:
    """Register a multi-part derivation under its template's name."""
    COMPOSITE[fn.__name__] = fn
    return fn


@composite_deriver
def buy_sell_signals(sim: Simulation, params: dict[str, Any]) -> Parts:
    """Executed buys, executed sells."""
    buys = sum(1 for f in sim.fills if f.side == "BUY")
    return buys, len(sim.fills) - buys


@composite_deriver
def first_buy(sim: Simulation, params: dict[str, Any]) -> Parts:
    """Shares, execution price and fill date of the first executed buy."""
    first = next(f for f in sim.fills if f.side == "BUY")
    return first.size, first.price, day(sim, first.t)


@composite_deriver
def trade_outcomes(sim: Simulation, params: dict[str, Any]) -> Parts:
    """Closed trades with net profit > 0, and all the other closed trades."""
    wins = sum(1 for trip in sim.trips if trip.net > 0)
    return wins, len(sim.trips) - wins


@composite_deriver
def commission(sim: Simulation, params: dict[str, Any]) -> Parts:
    """Total commission of the executed orders, and how many there were."""
    return math.fsum(f.commission for f in sim.fills), len(sim.fills)


@composite_deriver
def days_in_position(sim: Simulation, params: dict[str, Any]) -> Parts:
    """Bars closed holding shares, bars closed flat, all bars."""
    held = int(np.count_nonzero(sim.position))
    return held, len(sim.position) - held, len(sim.position)


@composite_deriver
def peak_portfolio_date(sim: Simulation, params: dict[str, Any]) -> Parts:
    """First bar of the highest close-marked value, and that value."""
    t = int(np.argmax(sim.value))
    return day(sim, t), float(sim.value[t])
