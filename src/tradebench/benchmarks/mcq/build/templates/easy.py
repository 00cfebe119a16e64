"""Easy templates: one read of the bars or of the broker log on one day."""

from __future__ import annotations

import numpy as np

from tradebench.benchmarks.mcq.build.backtest import BacktestLog
from tradebench.benchmarks.mcq.build.composite import Part, composite
from tradebench.benchmarks.mcq.build.templates.base import (
    Answer,
    Instance,
    NotApplicable,
    is_pair,
    iso,
    no_pair,
    pick,
    template,
)

SMA_PERIODS = (5, 10, 20, 50)
Result = Instance | NotApplicable


def _after_first_fill(log: BacktestLog) -> NotApplicable | None:
    if log.fills.empty:
        return NotApplicable("the strategy never traded")
    return None


@template("easy")
def first_close(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Close price of the first bar in the window (bars.csv), in price units, 2 decimals."""
    value = float(log.bars["close"].iloc[0])
    text = "What was the close price on the first trading day of the backtest window?"
    return Instance(text, Answer("number", value, 2))


@template("easy")
def volume(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Volume of the bar on a sampled trading day D (bars.csv `volume`), an integer."""
    day = pick(rng, log.bars.index)
    value = round(float(log.bars.loc[day, "volume"]))
    text = f"What was the traded volume (shares) on {iso(day)}?"
    return Instance(text, Answer("integer", value), {"date": iso(day)})


@template("easy")
def broker_cash(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Broker cash (`broker.getcash()`) at the close of a day D sampled from the first fill
    on (earlier days would just repeat the stated initial cash), 2 decimals."""
    if (na := _after_first_fill(log)) is not None:
        return na
    days = log.snapshots.index[log.snapshots.index >= log.fills["date"].iloc[0]]
    day = pick(rng, days)
    text = f"What was the broker's cash at the close of {iso(day)}?"
    value = float(log.snapshots.loc[day, "cash"])
    return Instance(text, Answer("number", value, 2), {"date": iso(day)})


@template("easy")
def portfolio_value(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Portfolio value (`broker.getvalue()`: cash + shares x close) at the close of a day D
    sampled from the first fill on, 2 decimals."""
    if (na := _after_first_fill(log)) is not None:
        return na
    days = log.snapshots.index[log.snapshots.index >= log.fills["date"].iloc[0]]
    day = pick(rng, days)
    text = f"What was the portfolio value (cash plus positions at the close) on {iso(day)}?"
    value = float(log.snapshots.loc[day, "value"])
    return Instance(text, Answer("number", value, 2), {"date": iso(day)})


@template("easy")
def sma(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Simple moving average of the close over n bars (n in 5, 10, 20, 50) ending on a day
    D on which it is defined (bars of the window only), 2 decimals."""
    n = int(rng.choice(SMA_PERIODS))
    series = log.bars["close"].rolling(n).mean().dropna()
    day = pick(rng, series.index)
    text = f"What was the {n}-day simple moving average of the close on {iso(day)}?"
    return Instance(text, Answer("number", float(series.loc[day]), 2), {"n": n, "date": iso(day)})


def affordable_shares(cash: np.ndarray, price: np.ndarray, rate: float) -> np.ndarray:
    """Largest whole n with n x price + n x price x rate <= cash (the broker's cash check),
    elementwise: the floor of the ratio, then nudged so the float inequality holds exactly."""
    n = np.floor(cash / (price * (1.0 + rate)))
    n = np.where((n + 1) * price + (n + 1) * price * rate <= cash, n + 1, n)
    n = np.where(n * price + n * price * rate > cash, n - 1, n)
    return np.maximum(n, 0).astype(np.int64)


@template("easy")
def max_shares(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Maximum affordable shares: the largest whole number n of shares with n x close + n x
    close x commission rate <= the broker cash (`broker.getcash()`), both at the close of a
    day D drawn among the days on which n >= 1."""
    cash = log.snapshots["cash"].to_numpy(float)
    close = log.bars["close"].to_numpy(float)
    n = affordable_shares(cash, close, log.config.commission_rate)
    days = log.snapshots.index[n >= 1]
    if days.empty:
        return NotApplicable("the cash never covers one share")
    day = pick(rng, days)
    value = int(n[log.snapshots.index.get_loc(day)])
    text = (
        f"At the close of {iso(day)}, how many whole shares at most could the broker's cash "
        "at that close buy at that day's close price, with the commission included (shares x "
        "price + commission <= cash)?"
    )
    return Instance(text, Answer("integer", value), {"date": iso(day)})


@template("easy")
def position_on_date(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Shares held at the close of a day D sampled among days with an open position (a flat
    day would make 0 the giveaway). Not asked under fixed-stake sizing."""
    if log.config.sizing.kind == "stake":
        return NotApplicable("fixed stake: the answer is the stated stake")
    held = log.snapshots.index[log.snapshots["position"] > 0]
    if held.empty:
        return NotApplicable("the strategy never held a position")
    day = pick(rng, held)
    value = int(log.snapshots.loc[day, "position"])
    return Instance(
        f"How many shares were held at the close of {iso(day)}?",
        Answer("integer", value),
        {"date": iso(day)},
    )


@template("easy")
def crossovers(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Number of bars on which the fast line crossed the slow line in either direction
    (backtrader bt.ind.CrossOver != 0) over the whole window."""
    if not is_pair(log):
        return no_pair(log)
    value = int((log.snapshots["cross"].fillna(0) != 0).sum())
    text = (
        "Over the whole window, how many times did the strategy's fast line cross its "
        "slow line (upward and downward crossings both count)?"
    )
    return Instance(text, Answer("integer", value))


@template("easy")
def buy_sell_signals(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Executed buy orders and executed sell orders, asked together as "B buys and S sells"
    (refused orders and a signal on the last bar, which has no next open, do not count)."""
    if (na := _after_first_fill(log)) is not None:
        return na
    buys = int((log.fills["side"] == "BUY").sum())
    key = (Part("integer", buys), Part("integer", len(log.fills) - buys))
    text = "How many buy orders and how many sell orders were executed?"
    return composite(text, "{0} buys and {1} sells", key, rng)
