"""Re-derive every template's answer from the checker's own simulation.

Written against `docs/mcq.md`'s definitions, not against the builder's code: plain NumPy
loops and reductions over `Simulation`, one function per template. Three registries:
`DERIVERS` (one simulation), `COMPARATIVE` (the question's simulation and the second,
alternative-parameter one) and `DERIVERS_V1` (schema-1 definitions of templates whose
definition has changed since).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tradebench.benchmarks.mcq.check import indicators as ind
from tradebench.benchmarks.mcq.check.simulate import Simulation

Value = float | int | str
Deriver = Callable[[Simulation, dict[str, Any]], Value]
PairDeriver = Callable[[Simulation, Simulation, dict[str, Any]], Value]
DERIVERS: dict[str, Deriver] = {}
COMPARATIVE: dict[str, PairDeriver] = {}
DERIVERS_V1: dict[str, Deriver] = {}
YEAR = 252

# The four day descriptions, spelled as the question's options spell them.
BOUGHT = "a buy order filled at that day's open"
SOLD = "a sell order filled at that day's open"
HELD = "no order filled; a long position was held"
FLAT = "no order filled; the account was flat"


def deriver(fn: Deriver) -> Deriver:
    """Register a derivation under its template's name."""
    DERIVERS[fn.__name__] = fn
    return fn


def pair_deriver(fn: PairDeriver) -> PairDeriver:
    """Register a comparative derivation (question's run, alternative run) by template name."""
    COMPARATIVE[fn.__name__] = fn
    return fn


def legacy_deriver(fn: Deriver) -> Deriver:
    """Register a schema-1 derivation under its template's name."""
    DERIVERS_V1[fn.__name__] = fn
    return fn


class ParamError(ValueError):
    """A record's parameter does not exist in the re-run (e.g. a date not in the bars)."""


def bar(sim: Simulation, params: dict[str, Any]) -> int:
    """Position of the record's `date` parameter among the bars."""
    day = np.datetime64(params["date"], "D")
    t = int(np.searchsorted(sim.dates, day))
    if t >= len(sim.dates) or sim.dates[t] != day:
        raise ParamError(f"date {params['date']} is not a bar of the window")
    return t


def day(sim: Simulation, t: int) -> str:
    """Bar t's date as YYYY-MM-DD."""
    return str(sim.dates[t])


@deriver
def first_close(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `first_close` from the simulation (definition in docs/mcq.md)."""
    return float(sim.close[0])


@deriver
def volume(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `volume` from the simulation (definition in docs/mcq.md)."""
    return round(float(sim.volume[bar(sim, params)]))


@deriver
def broker_cash(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `broker_cash` from the simulation (definition in docs/mcq.md)."""
    return float(sim.cash[bar(sim, params)])


@deriver
def portfolio_value(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `portfolio_value` from the simulation (definition in docs/mcq.md)."""
    return float(sim.value[bar(sim, params)])


@deriver
def sma(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `sma` from the simulation (definition in docs/mcq.md)."""
    return float(ind.sma(sim.close, int(params["n"]))[bar(sim, params)])


@deriver
def max_shares(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `max_shares`: count down from cash // close until the broker's check
    (shares x close + commission <= cash, at D's close) passes (definition in docs/mcq.md)."""
    t = bar(sim, params)
    cash, price, rate = float(sim.cash[t]), float(sim.close[t]), sim.commission_rate
    shares = int(cash // price)
    while shares > 0 and shares * price + shares * price * rate > cash:
        shares -= 1
    return shares


@deriver
def position_on_date(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `position_on_date` from the simulation (definition in docs/mcq.md)."""
    return int(sim.position[bar(sim, params)])


def _cross(sim: Simulation) -> np.ndarray:
    return np.nan_to_num(sim.rules.lines["cross"], nan=0.0)


@deriver
def crossovers(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `crossovers` from the simulation (definition in docs/mcq.md)."""
    return int(np.count_nonzero(_cross(sim)))


@deriver
def buy_sell_signals(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `buy_sell_signals` from the simulation (definition in docs/mcq.md)."""
    return len(sim.fills)


@deriver
def first_buy(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `first_buy` from the simulation (definition in docs/mcq.md)."""
    return next(f.price for f in sim.fills if f.side == "BUY")


@deriver
def trade_outcomes(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `trade_outcomes` from the simulation (definition in docs/mcq.md)."""
    return sum(1 for trip in sim.trips if trip.net > 0)


@deriver
def net_pnl(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `net_pnl` from the simulation (definition in docs/mcq.md)."""
    return float(sim.value[-1] - sim.initial_cash)


@deriver
def commission(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `commission` from the simulation (definition in docs/mcq.md)."""
    return math.fsum(f.commission for f in sim.fills)


@deriver
def total_shares_traded(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `total_shares_traded` from the simulation (definition in docs/mcq.md)."""
    return sum(f.size for f in sim.fills)


@deriver
def days_in_position(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `days_in_position` from the simulation (definition in docs/mcq.md)."""
    return int(np.count_nonzero(sim.position))


@deriver
def peak_portfolio_date(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `peak_portfolio_date` from the simulation (definition in docs/mcq.md)."""
    return day(sim, int(np.argmax(sim.value)))


@deriver
def best_trade_day(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `best_trade_day` from the simulation (definition in docs/mcq.md)."""
    best = max(sim.trips, key=lambda trip: (trip.net, -trip.exit_t))
    return day(sim, best.exit_t)


@deriver
def strategy_action_on_date(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `strategy_action_on_date` from the simulation (definition in docs/mcq.md)."""
    t = bar(sim, params)
    for f in sim.fills:
        if f.t == t:
            return BOUGHT if f.side == "BUY" else SOLD
    return HELD if sim.position[t] > 0 else FLAT


@deriver
def nth_trade_pnl(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `nth_trade_pnl` from the simulation (definition in docs/mcq.md)."""
    return sim.trips[int(params["k"]) - 1].net


@deriver
def cash_after_nth_order(sim: Simulation, params: dict[str, Any]) -> Value:
    """Re-derive `cash_after_nth_order` from the simulation (definition in docs/mcq.md)."""
    return sim.fills[int(params["k"]) - 1].cash_after
