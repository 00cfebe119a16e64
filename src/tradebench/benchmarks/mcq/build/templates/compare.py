"""Comparative hard templates: a second backtrader backtest with alternative parameters.

The second backtest is the question's backtest with only the strategy parameters changed,
to a set drawn by the seed from the strategy's grid (never the question's own set). Its
config travels in the record (`MCQRecord.alternative`), so the checker re-runs both with
its own engine.
"""

from __future__ import annotations

import numpy as np

from tradebench.benchmarks.mcq.build.backtest import BacktestLog
from tradebench.benchmarks.mcq.build.strategies import PARAM_GRIDS
from tradebench.benchmarks.mcq.build.templates.base import (
    Answer,
    Instance,
    NotApplicable,
    Result,
    Runner,
    comparative,
)
from tradebench.benchmarks.mcq.config import BacktestConfig, StrategySpec
from tradebench.benchmarks.mcq.params import describe_params


def alternative_config(config: BacktestConfig, rng: np.random.Generator) -> BacktestConfig | None:
    """The config with strategy parameters drawn from the grid, other than its own; None
    when the grid offers no other set."""
    name, own = config.strategy.name, config.strategy.params
    others = [p for p in PARAM_GRIDS[name] if StrategySpec(name=name, params=p).params != own]
    if not others:
        return None
    params = others[int(rng.integers(len(others)))]
    return config.model_copy(update={"strategy": StrategySpec(name=name, params=params)})


def _second(
    log: BacktestLog, rng: np.random.Generator, run: Runner
) -> tuple[BacktestConfig, BacktestLog] | NotApplicable:
    alt = alternative_config(log.config, rng)
    if alt is None:
        return NotApplicable("the strategy's grid has no other parameter set")
    return alt, run(alt)


def _intro(alt: BacktestConfig) -> str:
    return (
        "A second backtest is identical to this one (same data, broker, sizing and rules) "
        f"except for the strategy parameters, which are {describe_params(alt.strategy.params)}."
    )


@comparative("hard")
def sma_comparison(log: BacktestLog, rng: np.random.Generator, run: Runner) -> Result:
    """P&L across parameter sets: net profit (final value at the last close minus the
    initial cash) of a second backtest that differs only in the strategy parameters (drawn
    from the strategy's grid, never the question's own set), minus this backtest's net
    profit, 2 decimals. For `sma_cross` the parameters are the two SMA windows."""
    second = _second(log, rng, run)
    if isinstance(second, NotApplicable):
        return second
    alt, alt_log = second
    value = float(alt_log.snapshots["value"].iloc[-1]) - float(log.snapshots["value"].iloc[-1])
    text = (
        f"{_intro(alt)} What was the second backtest's net profit (final portfolio value minus "
        "the initial cash) minus this backtest's net profit?"
    )
    return Instance(text, Answer("number", value, 2), alternative=alt)


@comparative("hard")
def signal_diff(log: BacktestLog, rng: np.random.Generator, run: Runner) -> Result:
    """Signals across parameter sets: number of bars at whose close exactly one of the two
    backtests (this one and a second that differs only in the strategy parameters, drawn
    from the strategy's grid) held shares, i.e. their long/flat signals disagreed."""
    second = _second(log, rng, run)
    if isinstance(second, NotApplicable):
        return second
    alt, alt_log = second
    mine = log.snapshots["position"].to_numpy() > 0
    theirs = alt_log.snapshots["position"].to_numpy() > 0
    value = int(np.count_nonzero(mine != theirs))
    text = (
        f"{_intro(alt)} On how many trading days did exactly one of the two backtests hold "
        "shares at the close (one long, the other flat)?"
    )
    return Instance(text, Answer("integer", value), alternative=alt)
