"""The checker's own backtest: the strategy rules and the broker, re-implemented in NumPy.

It never imports backtrader nor the builder's modules. It follows the rules the question
states: decisions at a bar's close; a buy asks for the configured size; the order is first
checked against the cash at the decision close (value + commission), then filled at the next
bar's open if the cash still covers value + commission, otherwise refused; a sell closes the
whole position at the next open; commission = shares x rate x price; the account is marked
at each close. A signal on the last bar has no next open and never fills.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tradebench.benchmarks.mcq.check import indicators as ind
from tradebench.benchmarks.mcq.check.series import Bars
from tradebench.benchmarks.mcq.config import BacktestConfig


@dataclass(frozen=True)
class Fill:
    """One executed order: bar index, side, shares, price, commission, cash right after."""

    t: int
    side: str
    size: int
    price: float
    commission: float
    cash_after: float


@dataclass(frozen=True)
class RoundTrip:
    """One closed trade: entry/exit bar indices and prices, gross and net profit."""

    entry_t: int
    exit_t: int
    size: int
    entry_price: float
    exit_price: float
    gross: float
    net: float


@dataclass(frozen=True)
class Rules:
    """A strategy reduced to arrays: its lines, and where entry and exit fire."""

    lines: dict[str, np.ndarray]
    entry: np.ndarray
    exit: np.ndarray
    ready: int


@dataclass(frozen=True)
class Simulation:
    """The full re-run: bars, lines, per-bar account state, fills and round trips."""

    dates: np.ndarray
    open: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    rules: Rules
    cash: np.ndarray
    position: np.ndarray
    value: np.ndarray
    fills: tuple[Fill, ...]
    trips: tuple[RoundTrip, ...]
    initial_cash: float
    commission_rate: float


def _first_ready(*arrays: np.ndarray) -> int:
    defined = np.all([~np.isnan(a) for a in arrays], axis=0)
    return int(np.argmax(defined)) if defined.any() else len(defined)


def _pair(name: str, p: dict[str, float | int], close: np.ndarray) -> Rules:
    if name == "sma_cross":
        fast, slow = ind.sma(close, int(p["fast"])), ind.sma(close, int(p["slow"]))
    elif name in ("ewma", "ewma_cross"):
        fast, slow = ind.ema(close, int(p["fast"])), ind.ema(close, int(p["slow"]))
    else:
        fast = ind.ema(close, int(p["fast"])) - ind.ema(close, int(p["slow"]))
        slow = ind.ema(fast, int(p["signal"]))
    cross = ind.crossings(fast, slow)
    lines = {"fast": fast, "slow": slow, "cross": cross}
    # Every pair strategy also computes the crossing line, so its rules start where that
    # line is first defined: the second bar on which both lines are.
    if name == "ewma":
        return Rules(lines, fast > slow, fast < slow, _first_ready(cross))
    return Rules(lines, cross > 0, cross < 0, _first_ready(cross))


def strategy_rules(config: BacktestConfig, close: np.ndarray) -> Rules:
    """Compute the strategy's lines and its entry/exit conditions at every close."""
    p = config.strategy.params
    name = config.strategy.name
    with np.errstate(invalid="ignore"):
        if name in ("sma_cross", "ewma", "macd_cross", "ewma_cross"):
            return _pair(name, p, close)
        if name == "rolling_mean":
            mean = ind.sma(close, int(p["window"]))
            return Rules({"mean": mean}, close > mean, close < mean, _first_ready(mean))
        if name == "mean_reversion":
            mean = ind.sma(close, int(p["window"]))
            entry = close < mean * (1.0 - float(p["band"]))
            return Rules({"mean": mean}, entry, close > mean, _first_ready(mean))
        r = ind.rsi(close, int(p["period"]))
        return Rules({"rsi": r}, r < p["lower"], r > p["upper"], _first_ready(r))


def _buy_size(config: BacktestConfig, cash: float, close: float) -> int:
    if config.sizing.kind == "stake":
        return config.sizing.stake
    return math.floor(cash * config.sizing.percent / 100.0 / close)


class _Account:
    """Mutable cash/position book used only inside `simulate`."""

    def __init__(self, cash: float, rate: float) -> None:
        self.cash, self.rate = cash, rate
        self.shares, self.entry_price, self.entry_comm, self.entry_t = 0, 0.0, 0.0, -1

    def affordable(self, size: int, price: float) -> bool:
        return self.cash - size * price - size * self.rate * price >= 0.0

    def buy(self, t: int, size: int, price: float) -> Fill:
        comm = size * self.rate * price
        self.cash = self.cash - size * price - comm
        self.shares, self.entry_price, self.entry_comm, self.entry_t = size, price, comm, t
        return Fill(t, "BUY", size, price, comm, self.cash)

    def sell(self, t: int, price: float) -> tuple[Fill, RoundTrip]:
        size = self.shares
        gross = size * (price - self.entry_price)
        comm = size * self.rate * price
        self.cash = self.cash + (size * self.entry_price + gross) - comm
        trip = RoundTrip(
            self.entry_t, t, size, self.entry_price, price, gross, gross - (self.entry_comm + comm)
        )
        self.shares = 0
        return Fill(t, "SELL", size, price, comm, self.cash), trip


def simulate(config: BacktestConfig, bars: Bars) -> Simulation:
    """Re-run the configured backtest on `bars` and return every per-bar quantity."""
    opens, close = bars.open, bars.close
    rules = strategy_rules(config, close)
    acct = _Account(config.initial_cash, config.commission_rate)
    n = len(close)
    cash, pos, value = np.empty(n), np.zeros(n, dtype=np.int64), np.empty(n)
    fills: list[Fill] = []
    trips: list[RoundTrip] = []
    order: tuple[str, int] | None = None
    for t in range(n):
        if order is not None and order[0] == "BUY":
            size = order[1]
            if acct.affordable(size, close[t - 1]) and acct.affordable(size, opens[t]):
                fills.append(acct.buy(t, size, opens[t]))
        elif order is not None:
            fill, trip = acct.sell(t, opens[t])
            fills.append(fill)
            trips.append(trip)
        order = None
        cash[t], pos[t] = acct.cash, acct.shares
        value[t] = acct.cash + acct.shares * close[t]
        if t < rules.ready or t == n - 1:
            continue
        if acct.shares == 0 and rules.entry[t]:
            size = _buy_size(config, acct.cash, close[t])
            order = ("BUY", size) if size > 0 else None
        elif acct.shares > 0 and rules.exit[t]:
            order = ("SELL", acct.shares)
    return Simulation(
        bars.dates.astype("datetime64[D]"),
        opens,
        close,
        bars.volume,
        rules,
        cash,
        pos,
        value,
        tuple(fills),
        tuple(trips),
        config.initial_cash,
        config.commission_rate,
    )
