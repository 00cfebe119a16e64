"""Hard templates: risk and performance statistics whose convention the question states.

The comparative hard templates (a second backtest) are in `compare.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tradebench.benchmarks.mcq.build.backtest import BacktestLog
from tradebench.benchmarks.mcq.build.templates.base import (
    Answer,
    Instance,
    NotApplicable,
    is_pair,
    iso,
    no_pair,
    template,
)

TRADING_DAYS = 252
Result = Instance | NotApplicable
ANNUAL = (
    f"annualised over {TRADING_DAYS} trading days per year: "
    f"(final value / initial cash)^({TRADING_DAYS} / N) - 1, N = number of bars"
)


@dataclass(frozen=True)
class Drawdown:
    """The maximum drawdown of the close-marked value: depth and its bar positions."""

    depth: float
    peak: int
    trough: int
    recovery: int | None


def max_drawdown_of(value: pd.Series) -> Drawdown:
    """Deepest (running peak - value) / running peak; the peak is the last bar at or before
    the trough whose value equals the running peak; recovery is the first later bar whose
    value is back at or above that peak (None if never)."""
    v = value.to_numpy(float)
    peaks = np.maximum.accumulate(v)
    dd = (peaks - v) / peaks
    trough = int(np.argmax(dd))
    peak = int(np.flatnonzero(v[: trough + 1] == peaks[trough])[-1])
    later = np.flatnonzero(v[trough:] >= peaks[trough])
    recovery = trough + int(later[0]) if trough > 0 and later.size else None
    return Drawdown(float(dd[trough]), peak, trough, recovery)


def _final_ratio(log: BacktestLog) -> float:
    return float(log.snapshots["value"].iloc[-1]) / log.config.initial_cash


def _annual(log: BacktestLog) -> float:
    return _final_ratio(log) ** (TRADING_DAYS / len(log.snapshots)) - 1.0


@template("hard")
def max_drawdown(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Maximum drawdown of the close-marked portfolio value in money: max over bars of
    (running peak - value), in price units, 2 decimals (backtrader DrawDown max.moneydown)."""
    value = log.snapshots["value"].to_numpy()
    money = float(np.max(np.maximum.accumulate(value) - value))
    if money <= 0:
        return NotApplicable("the answer is zero (a zero beside non-zero options is guessable)")
    text = (
        "What was the maximum drawdown of the portfolio value (marked at each close) in money: "
        "the largest fall from a running peak, in price units?"
    )
    return Instance(text, Answer("number", money, 2), {"in": "money"})


@template("hard")
def roi_percentage(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Return on investment: (final value / initial cash - 1) x 100, 2 decimals."""
    text = "What was the total return on the initial cash, in percent?"
    return Instance(text, Answer("number", (_final_ratio(log) - 1.0) * 100, 2, "%"))


@template("hard")
def win_rate(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Closed trades with net profit > 0 divided by all closed trades, in percent, 2
    decimals (open trades excluded)."""
    if log.trades.empty:
        return NotApplicable("no closed trade")
    value = float((log.trades["pnlcomm"] > 0).mean() * 100)
    text = "What share of closed trades were winners (net profit after commissions > 0), in %?"
    return Instance(text, Answer("number", value, 2, "%"))


@template("hard")
def profit_factor(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Sum of net profits of winning closed trades / absolute sum of net losses of losing
    closed trades (`pnlcomm`), 2 decimals; needs at least one of each."""
    pnl = log.trades["pnlcomm"]
    if not ((pnl > 0).any() and (pnl < 0).any()):
        return NotApplicable("needs at least one winning and one losing closed trade")
    value = float(pnl[pnl > 0].sum() / -pnl[pnl < 0].sum())
    text = (
        "What was the profit factor: total net profit of winning closed trades divided by "
        "the absolute total net loss of losing closed trades?"
    )
    return Instance(text, Answer("number", value, 2))


@template("hard")
def annualized_return(log: BacktestLog, rng: np.random.Generator) -> Result:
    """(final value / initial cash)^(252 / N) - 1 in percent, N = number of bars, 2 decimals
    (backtrader Returns rnorm100 with tann=252)."""
    text = f"What was the annualised return in percent, {ANNUAL}?"
    return Instance(text, Answer("number", _annual(log) * 100, 2, "%"))


@template("hard")
def avg_holding_period(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Mean over closed trades of the bars between the entry fill and the exit fill
    (`trade.barlen`), 2 decimals."""
    if log.trades.empty:
        return NotApplicable("no closed trade")
    text = (
        "What was the average holding period of closed trades, in bars from the entry "
        "fill to the exit fill?"
    )
    return Instance(text, Answer("number", float(log.trades["barlen"].mean()), 2))


def subperiod(n_bars: int, rng: np.random.Generator) -> tuple[int, int]:
    """A contiguous run of bars [first, last] covering a quarter to a half of the window."""
    length = int(rng.integers(n_bars // 4, n_bars // 2 + 1))
    first = int(rng.integers(0, n_bars - length + 1))
    return first, first + length - 1


@template("hard")
def golden_cross_count(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Number of bars dated from D1 to D2 inclusive (a subperiod of a quarter to a half of
    the window, the first of up to 8 seeded draws that holds one) on which the fast line
    crossed above the slow line (bt.ind.CrossOver > 0); the lines are computed over the
    whole window."""
    if not is_pair(log):
        return no_pair(log)
    cross = log.snapshots["cross"].to_numpy(float)
    for _ in range(8):
        first, last = subperiod(len(cross), rng)
        value = int(np.count_nonzero(cross[first : last + 1] > 0))
        if value > 0:
            break
    else:
        return NotApplicable("no upward crossing in 8 drawn subperiods")
    d1, d2 = iso(log.snapshots.index[first]), iso(log.snapshots.index[last])
    text = (
        f"Counting only the bars dated from {d1} to {d2} inclusive (the lines themselves are "
        "computed over the whole window), on how many bars did the strategy's fast line cross "
        "above its slow line?"
    )
    return Instance(text, Answer("integer", value), {"start": d1, "end": d2})


@template("hard")
def max_drawdown_window(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Bars from the peak to the trough of the maximum drawdown (peak = last bar at or
    before the trough whose value equals the running peak)."""
    dd = max_drawdown_of(log.snapshots["value"])
    text = (
        "How many trading days (bars) passed from the peak to the trough of the maximum "
        "drawdown of the close-marked portfolio value?"
    )
    return Instance(text, Answer("integer", dd.trough - dd.peak))


@template("hard")
def drawdown_recovery_days(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Bars from the trough of the maximum drawdown to the first close at which the value is
    back at or above the prior peak. Not asked if it never recovers within the window."""
    dd = max_drawdown_of(log.snapshots["value"])
    if dd.recovery is None:
        return NotApplicable("the maximum drawdown never recovered within the window")
    text = (
        "How many trading days (bars) after the trough of the maximum drawdown did the "
        "portfolio value first get back to its prior peak?"
    )
    return Instance(text, Answer("integer", dd.recovery - dd.trough))


@template("hard")
def calmar_ratio(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Annualised return (fraction, 252-day convention) divided by the maximum drawdown
    (fraction), 2 decimals."""
    depth = max_drawdown_of(log.snapshots["value"]).depth
    if depth == 0:
        return NotApplicable("no drawdown")
    text = (
        f"What was the Calmar ratio: annualised return ({ANNUAL}) divided by the maximum "
        "drawdown of the close-marked value, both as fractions?"
    )
    return Instance(text, Answer("number", _annual(log) / depth, 2))


@template("hard")
def exposure_adjusted_return(log: BacktestLog, rng: np.random.Generator) -> Result:
    """Total return in percent divided by exposure, exposure = bars with shares held at the
    close / all bars, 2 decimals."""
    exposure = float((log.snapshots["position"] > 0).mean())
    if exposure == 0:
        return NotApplicable("the strategy never held a position")
    value = (_final_ratio(log) - 1.0) * 100 / exposure
    text = (
        "What was the exposure-adjusted return: total return in percent divided by the "
        "fraction of bars at whose close shares were held?"
    )
    return Instance(text, Answer("number", value, 2, "%"))
