"""Re-derivations of the comparative templates from two of the checker's own simulations.

The record's `alternative` config is re-run through `simulate` exactly like its `config`;
these functions compare the two runs by the definitions in docs/mcq.md.
"""

from __future__ import annotations

from typing import Any

from tradebench.benchmarks.mcq.check.derive import Value, pair_deriver
from tradebench.benchmarks.mcq.check.simulate import Simulation


@pair_deriver
def sma_comparison(sim: Simulation, alt: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `sma_comparison`: the alternative's net profit minus the question's."""
    return (float(alt.value[-1]) - alt.initial_cash) - (float(sim.value[-1]) - sim.initial_cash)


@pair_deriver
def signal_diff(sim: Simulation, alt: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `signal_diff`: closes at which exactly one run held shares."""
    pairs = zip(sim.position.tolist(), alt.position.tolist(), strict=True)
    return sum(1 for mine, theirs in pairs if (mine > 0) != (theirs > 0))
