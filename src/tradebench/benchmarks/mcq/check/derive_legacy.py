"""Schema-1 definitions of the four templates whose definition changed in schema 2.

Version-1 records (written before comparative backtests existed) keep their meaning: the
checker re-derives them by the definitions they were built with, so old files still check.

| template | schema-1 definition |
|---|---|
| `max_shares` | largest position held at any close |
| `golden_cross_count` | upward crossings over the whole window |
| `sma_comparison` | bars with SMA(a) > SMA(b), both defined (params a, b) |
| `signal_diff` | fast line minus slow line at the close of D |
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tradebench.benchmarks.mcq.check import indicators as ind
from tradebench.benchmarks.mcq.check.derive import Value, bar, legacy_deriver
from tradebench.benchmarks.mcq.check.simulate import Simulation


@legacy_deriver
def max_shares(sim: Simulation, params: dict[str, Any]) -> Value:
    """Schema 1: the largest position held at any close."""
    return int(sim.position.max())


@legacy_deriver
def golden_cross_count(sim: Simulation, params: dict[str, Any]) -> Value:
    """Schema 1: upward crossings of the fast line over the whole window."""
    return sum(1 for c in sim.rules.lines["cross"].tolist() if c == 1.0)


@legacy_deriver
def sma_comparison(sim: Simulation, params: dict[str, Any]) -> Value:
    """Schema 1: bars with SMA(a) strictly above SMA(b), counting bars where both exist."""
    fast = ind.sma(sim.close, int(params["a"]))
    slow = ind.sma(sim.close, int(params["b"]))
    both = ~np.isnan(fast) & ~np.isnan(slow)
    return int(np.count_nonzero(fast[both] > slow[both]))


@legacy_deriver
def signal_diff(sim: Simulation, params: dict[str, Any]) -> Value:
    """Schema 1: fast line minus slow line at the close of the record's date."""
    t = bar(sim, params)
    return float(sim.rules.lines["fast"][t] - sim.rules.lines["slow"][t])
