"""The configuration preamble every question starts with: all a solver needs to re-run it."""

from __future__ import annotations

from tradebench.benchmarks.mcq.build.strategies import describe_strategy
from tradebench.benchmarks.mcq.build.templates.base import Answer
from tradebench.benchmarks.mcq.config import BacktestConfig


def preamble(config: BacktestConfig) -> str:
    """State data, broker, fills, sizing and strategy rules in plain words."""
    d = config.data
    basis = "adjusted" if d.adjusted else "raw (unadjusted)"
    return (
        f"Backtest setup (backtrader, long only, one position at a time). Data: daily bars of "
        f"{d.symbol} from {d.start.isoformat()} to {d.end.isoformat()} inclusive, {basis} "
        "prices (given as bars.csv with columns date,open,high,low,close,volume when tools "
        f"are available). Broker: initial cash {config.initial_cash:,.2f}; commission "
        f"{config.commission_rate * 100:g}% of each fill's traded value; market orders are "
        "decided at a bar's close and filled at the next bar's open; a buy whose value plus "
        "commission the cash does not cover (checked at the signal close and again at the "
        f"fill) is refused. Sizing: {config.sizing.describe()}; a sell closes the whole "
        f"position. Strategy: {describe_strategy(config.strategy.name, config.strategy.params)} "
        "Days are counted in bars (trading days); an open position is marked at the close."
    )


def question_text(config: BacktestConfig, text: str, answer: Answer) -> str:
    """Preamble + the question + the rounding/format instruction for its answer kind."""
    if answer.kind == "number":
        unit = " (in percent)" if answer.unit == "%" else ""
        tail = f" Round to {answer.decimals} decimals{unit}."
    elif answer.kind == "date":
        tail = " Answer with a date."
    else:
        tail = ""
    return f"{preamble(config)}\n\nQuestion: {text}{tail}"
