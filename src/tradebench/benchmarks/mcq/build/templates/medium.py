"""Medium templates: aggregate the order, trade or snapshot log over the whole backtest."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tradebench.benchmarks.mcq.build.backtest import BacktestLog
from tradebench.benchmarks.mcq.build.composite import Part, composite, jitter_parts
from tradebench.benchmarks.mcq.build.templates.base import (
    ACTION_LABELS,
    Answer,
    Instance,
    NotApplicable,
    iso,
    ordinal,
    pick,
    template,
)

Result = Instance | NotApplicable


def _needs_trades(log: BacktestLog) -> NotApplicable | None:
    if log.trades.empty:
        return NotApplicable("no closed trade")
    return None


@template("medium")
def first_buy(log: BacktestLog, rng: np.random.Generator) -> Result:
    """The first completed buy order: its size in shares, its execution price
    (`order.executed.price`: the open of the bar after the signal, 2 decimals) and its date,
    asked together as "N shares at P on D". Distractors: the later buys, as the same three
    facts. Needs four buys."""
    buys = log.fills[log.fills["side"] == "BUY"]
    if len(buys) < 4:
        return NotApplicable("fewer than 4 buys: not enough alternative buys")
    facts = [
        (
            Part("integer", int(b["size"])),
            Part("number", float(b["price"])),
            Part("date", iso(b["date"])),
        )
        for _, b in buys.iterrows()
    ]
    text = (
        "The first buy order that was executed: how many shares did it buy, at what execution "
        "price, and on which date was it filled?"
    )
    return composite(text, "{0} shares at {1} on {2}", facts[0], rng, real=facts[1:7], vary=None)


@template("medium")
def trade_outcomes(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Closed trades counted by outcome, asked together as "W profitable and L losing":
    W = those whose net profit (`trade.pnlcomm`, after both commissions) is strictly
    positive, L = all other closed trades."""
    if (na := _needs_trades(log)) is not None:
        return na
    wins = int((log.trades["pnlcomm"] > 0).sum())
    key = (Part("integer", wins), Part("integer", len(log.trades) - wins))
    text = (
        "How many closed trades were profitable (net profit after both commissions strictly "
        "positive) and how many were not?"
    )
    return composite(text, "{0} profitable and {1} losing", key, rng)


@template("medium")
def net_pnl(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Final portfolio value at the last close minus the initial cash (open positions are
    marked at the last close), 2 decimals."""
    value = float(log.snapshots["value"].iloc[-1]) - log.config.initial_cash
    text = "What was the net profit or loss: final portfolio value minus the initial cash?"
    return Instance(text, Answer("number", value, 2))


@template("medium")
def commission(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Sum of the commissions of all executed orders (`order.executed.comm`, 2 decimals)
    and the number of executed orders, asked together as "C over N executed orders"."""
    if log.fills.empty:
        return NotApplicable("the strategy never traded")
    key = (Part("number", float(log.fills["commission"].sum())), Part("integer", len(log.fills)))
    text = (
        "What was the total commission paid over the backtest, and over how many executed orders?"
    )
    return composite(text, "{0} over {1} executed orders", key, rng)


@template("medium")
def total_shares_traded(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Sum of the absolute sizes of all executed orders (buys plus sells), in shares."""
    if log.fills.empty:
        return NotApplicable("the strategy never traded")
    text = "How many shares were traded in total (bought plus sold)?"
    return Instance(text, Answer("integer", int(log.fills["size"].sum())))


def _held_varied(key: tuple[Part, ...], rng: np.random.Generator) -> tuple[Part, ...] | None:
    """Days held moved by the paper's rule; flat days follow so the total stays true."""
    moved = jitter_parts(key[:1], rng)
    total = int(key[2].value)
    if moved is None or not 0 < int(moved[0].value) <= total:
        return None
    held = int(moved[0].value)
    return (Part("integer", held), Part("integer", total - held), key[2])


@template("medium")
def days_in_position(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Bars at whose close the position was non-zero, bars at whose close it was flat, and
    all bars, asked together as "H days holding shares, F days flat (of T trading days)"."""
    held = int((log.snapshots["position"] > 0).sum())
    if held == 0:
        return NotApplicable("the strategy never held a position")
    total = len(log.snapshots)
    key = (Part("integer", held), Part("integer", total - held), Part("integer", total))
    text = (
        "On how many trading days did the account hold shares at the close, and on how many "
        "was it flat?"
    )
    form = "{0} days holding shares, {1} days flat (of {2} trading days)"
    return composite(text, form, key, rng, vary=_held_varied)


def _quarter_peaks(value: pd.Series, exclude: pd.Timestamp) -> tuple[str, ...]:
    """Dates of each calendar quarter's highest value, best first, except `exclude`'s."""
    quarters = value.index.to_period("Q")
    peaks = value.groupby(quarters).idxmax()
    peaks = peaks[peaks.index != exclude.to_period("Q")]
    ranked = sorted(peaks.tolist(), key=lambda d: (-value.loc[d], d))
    return tuple(iso(d) for d in ranked)


@template("medium")
def peak_portfolio_date(log: BacktestLog, rng: np.random.Generator) -> Result:
    """First date on which the close-marked portfolio value reached its maximum, and that
    value (2 decimals), asked together as "D at V". Not asked when the value never rose
    above the initial cash. Distractors: the peak days of other calendar quarters, each with
    its own value."""
    value = log.snapshots["value"]
    if value.max() <= log.config.initial_cash:
        return NotApplicable("the portfolio never rose above the initial cash")
    day = value.idxmax()
    key = (Part("date", iso(day)), Part("number", float(value.loc[day])))
    others = [
        (Part("date", d), Part("number", float(value.loc[pd.Timestamp(d)])))
        for d in _quarter_peaks(value, day)
    ]
    text = (
        "On which date did the portfolio value (marked at the close) reach its maximum, and "
        "what was that value?"
    )
    if len(others) < 3:
        return NotApplicable("fewer than 3 other quarters: not enough alternative peaks")
    return composite(text, "{0} at {1}", key, rng, real=others[:6], vary=None)


@template("medium")
def best_trade_day(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Exit date (closing fill) of the closed trade with the highest net profit
    (`trade.pnlcomm`; the earliest on a tie). Distractors: the other trades' exit dates."""
    if len(log.trades) < 4:
        return NotApplicable("fewer than 4 closed trades: not enough plausible dates")
    ranked = log.trades.sort_values(["pnlcomm", "exit_date"], ascending=[False, True])
    best = ranked["exit_date"].iloc[0]
    others = tuple(iso(d) for d in ranked["exit_date"].iloc[1:])
    text = "On which date was the most profitable closed trade (net of commissions) closed?"
    return Instance(text, Answer("date", iso(best)), {}, others)


def day_states(log: BacktestLog) -> pd.Series:
    """Index into ACTION_LABELS for every bar: bought, sold, held or flat."""
    states = pd.Series(np.where(log.snapshots["position"] > 0, 2, 3), log.snapshots.index)
    for side, code in (("BUY", 0), ("SELL", 1)):
        states.loc[pd.DatetimeIndex(log.fills.loc[log.fills["side"] == side, "date"])] = code
    return states


@template("medium")
def strategy_action_on_date(log: BacktestLog, rng: np.random.Generator) -> Result:
    """What happened on a day D: a buy filled at the open, a sell filled at the open, no
    fill while holding, or no fill while flat. The state is drawn uniformly among those
    that occur, then D uniformly among its days, so no option is favoured."""
    states = day_states(log)
    present = [int(s) for s in np.unique(states.to_numpy())]
    if len(present) < 2:
        return NotApplicable("only one kind of day occurs")
    state = present[int(rng.integers(len(present)))]
    day = pick(rng, states.index[states == state])
    text = f"Which describes the account on {iso(day)}?"
    return Instance(text, Answer("choice", ACTION_LABELS[state]), {"date": iso(day)})


@template("medium")
def nth_trade_pnl(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Net profit (`trade.pnlcomm`) of the k-th closed trade in order of closing, k drawn
    uniformly from 1..number of closed trades, 2 decimals."""
    if (na := _needs_trades(log)) is not None:
        return na
    k = int(rng.integers(1, len(log.trades) + 1))
    value = float(log.trades["pnlcomm"].iloc[k - 1])
    text = f"What was the net profit (after both commissions) of the {ordinal(k)} closed trade?"
    return Instance(text, Answer("number", value, 2), {"k": k})


@template("medium")
def cash_after_nth_order(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Broker cash right after the k-th executed order (k drawn from 1..number of executed
    orders), read from `broker.getcash()` when the fill is notified, 2 decimals."""
    if log.fills.empty:
        return NotApplicable("the strategy never traded")
    k = int(rng.integers(1, len(log.fills) + 1))
    value = float(log.fills["cash_after"].iloc[k - 1])
    text = f"What was the broker's cash right after the {ordinal(k)} executed order?"
    return Instance(text, Answer("number", value, 2), {"k": k})
