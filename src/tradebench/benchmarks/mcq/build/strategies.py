"""The backtrader strategies, all on one instrumented base class.

`InstrumentedStrategy` logs every completed or refused order, every closed trade and a
snapshot of the broker (cash, value, position) plus the strategy's indicator lines at each
bar's close. Subclasses only declare their indicators and their entry/exit rules, so the
order handling (long-only, one position, market orders filled at the next open, sizing
from the config) is the same for all of them.

The default five follow the paper's definitions where it has them: SMA crossover (events),
Rolling Window Mean (trend following: long while the close is above its rolling mean) and
EWMA (level condition: long while the fast EMA is above the slow one), plus RSI and MACD.
`mean_reversion` and `ewma_cross` are the schema-1 rules, kept so that old files re-run.
"""

from __future__ import annotations

import math
from typing import ClassVar

from tradebench.benchmarks.mcq.build._backtrader import backtrader as bt
from tradebench.benchmarks.mcq.config import StrategyName

Params = dict[str, float | int]

# Parameter grids the seed samples from; every combination is a valid strategy.
PARAM_GRIDS: dict[StrategyName, list[Params]] = {
    "sma_cross": [{"fast": f, "slow": s} for f in (5, 10, 20) for s in (30, 50, 100)],
    "rolling_mean": [{"window": w} for w in (10, 20, 30, 50, 100)],
    "ewma": [{"fast": f, "slow": s} for f in (8, 12, 20) for s in (26, 40, 60)],
    "rsi": [
        {"period": p, "lower": lo, "upper": up}
        for p in (10, 14)
        for lo in (30, 35)
        for up in (65, 70)
    ],
    "macd_cross": [
        {"fast": 12, "slow": 26, "signal": 9},
        {"fast": 8, "slow": 17, "signal": 9},
        {"fast": 5, "slow": 35, "signal": 5},
    ],
    "mean_reversion": [{"window": w, "band": b} for w in (10, 20, 30) for b in (0.02, 0.03, 0.05)],
    "ewma_cross": [{"fast": f, "slow": s} for f in (8, 12, 20) for s in (26, 40, 60)],
}

# `--defaults paper`: the parameter set of the paper's Appendix A, one per strategy (the
# legacy rules keep their schema-1 class defaults).
PAPER_DEFAULTS: dict[StrategyName, Params] = {
    "sma_cross": {"fast": 10, "slow": 30},
    "rolling_mean": {"window": 90},
    "ewma": {"fast": 5, "slow": 30},
    "rsi": {"period": 12, "lower": 10, "upper": 90},
    "macd_cross": {"fast": 12, "slow": 26, "signal": 9},
    "mean_reversion": {"window": 20, "band": 0.03},
    "ewma_cross": {"fast": 12, "slow": 26},
}

# Strategies with a fast line and a slow line (crossings are logged for all of them).
PAIR_STRATEGIES: tuple[StrategyName, ...] = ("sma_cross", "ewma", "macd_cross", "ewma_cross")

_EMA = "bt.ind.EMA, alpha = 2/(period+1), seeded with the simple mean"


def describe_strategy(name: StrategyName, p: Params) -> str:
    """Plain-words rules of a strategy, for the question preamble."""
    if name == "sma_cross":
        return (
            f"SMA crossover: fast line SMA({p['fast']}) and slow line SMA({p['slow']}) of the "
            "close (backtrader bt.ind.SMA); buy when the fast line crosses above the slow line "
            "(bt.ind.CrossOver > 0) while flat; close the position when it crosses below."
        )
    if name == "rolling_mean":
        return (
            f"rolling window mean (trend following): mean = SMA({p['window']}) of the close; "
            "buy when the close is above the mean while flat; close the position when the "
            "close is below the mean."
        )
    if name == "ewma":
        return (
            f"EWMA: fast line EMA({p['fast']}) and slow line EMA({p['slow']}) of the close "
            f"({_EMA}); from the second bar on which both lines are defined, buy at any close "
            "where the fast line is above the slow line while flat; close the position at any "
            "close where the fast line is below the slow line."
        )
    if name == "rsi":
        return (
            f"RSI: RSI({p['period']}) of the close (bt.ind.RSI, Wilder smoothing); buy when RSI "
            f"< {p['lower']} while flat; close the position when RSI > {p['upper']}."
        )
    if name == "mean_reversion":
        return (
            f"rolling-window mean reversion: mean = SMA({p['window']}) of the close; buy when "
            f"the close is below mean x (1 - {p['band']:g}) while flat; close the position when "
            "the close is above the mean."
        )
    if name == "ewma_cross":
        return (
            f"EWMA crossover: fast line EMA({p['fast']}) and slow line EMA({p['slow']}) of the "
            f"close ({_EMA}); buy when the fast line crosses above the slow line while flat; "
            "close when it crosses below."
        )
    return (
        f"MACD crossover: MACD line = EMA({p['fast']}) - EMA({p['slow']}) of the close, signal "
        f"line = EMA({p['signal']}) of the MACD line (bt.ind.MACD); buy when the MACD line "
        "crosses above the signal line while flat; close the position when it crosses below."
    )


class InstrumentedStrategy(bt.Strategy):
    """Long-only, one position at a time; logs orders, trades and daily snapshots."""

    params = (("sizing_kind", "percent"), ("percent", 95.0), ("stake", 100))
    line_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.pending = None
        self.snapshots: list[tuple] = []
        self.fills: list[tuple] = []
        self.refusals: list[tuple] = []
        self.closed: list[tuple] = []
        self.logged_lines = self.setup_lines()

    def setup_lines(self) -> dict[str, bt.LineSeries]:
        """Create the indicators; return the lines to log at each close, by name."""
        raise NotImplementedError

    def wants_entry(self) -> bool:
        """True when the entry rule fires on the current bar."""
        raise NotImplementedError

    def wants_exit(self) -> bool:
        """True when the exit rule fires on the current bar."""
        raise NotImplementedError

    def order_size(self) -> int:
        """Shares for a buy: fixed stake, or floor(percent of cash / close)."""
        if self.p.sizing_kind == "stake":
            return int(self.p.stake)
        return math.floor(self.broker.getcash() * self.p.percent / 100.0 / self.data.close[0])

    def notify_order(self, order: bt.Order) -> None:
        """Log fills (with cash right after) and refusals; release the pending slot."""
        if order.status == order.Completed:
            self.fills.append(
                (
                    bt.num2date(order.executed.dt),
                    "BUY" if order.isbuy() else "SELL",
                    abs(order.executed.size),
                    order.executed.price,
                    order.executed.comm,
                    self.broker.getcash(),
                )
            )
        elif order.status in (order.Margin, order.Rejected, order.Canceled, order.Expired):
            self.refusals.append(
                (
                    self.data.datetime.date(0),
                    "BUY" if order.isbuy() else "SELL",
                    abs(order.created.size),
                    order.getstatusname(),
                )
            )
        if order.status not in (order.Submitted, order.Accepted):
            self.pending = None

    def notify_trade(self, trade: bt.Trade) -> None:
        """Log each closed round trip with backtrader's own pnl, pnlcomm and barlen."""
        if trade.isclosed:
            self.closed.append(
                (
                    bt.num2date(trade.dtopen),
                    bt.num2date(trade.dtclose),
                    trade.price,
                    trade.pnl,
                    trade.pnlcomm,
                    trade.barlen,
                )
            )

    def _snapshot(self) -> None:
        """Log the close: the bar's `date2num` stamp (`run_backtest` turns it back into
        the bar's date), cash, value, shares held and the logged lines."""
        broker = self.broker
        self.snapshots.append(
            (
                self.data.datetime[0],
                broker.getcash(),
                broker.getvalue(),
                self.position.size,
                *[float(line[0]) for line in self.logged_lines.values()],
            )
        )

    def prenext(self) -> None:
        """Before the indicators are ready: only snapshot."""
        self._snapshot()

    def next(self) -> None:
        """Snapshot, then apply the entry or exit rule (market order, next open)."""
        self._snapshot()
        if self.pending is not None:
            return
        if not self.position:
            if self.wants_entry():
                size = self.order_size()
                if size > 0:
                    self.pending = self.buy(size=size)
        elif self.wants_exit():
            self.pending = self.close()


class _CrossStrategy(InstrumentedStrategy):
    line_names = ("fast", "slow", "cross")

    def make_pair(self) -> tuple[bt.LineSeries, bt.LineSeries]:
        raise NotImplementedError

    def setup_lines(self) -> dict[str, bt.LineSeries]:
        self.fast, self.slow = self.make_pair()
        self.cross = bt.ind.CrossOver(self.fast, self.slow)
        return {"fast": self.fast, "slow": self.slow, "cross": self.cross}

    def wants_entry(self) -> bool:
        return self.cross[0] > 0

    def wants_exit(self) -> bool:
        return self.cross[0] < 0


class SmaCross(_CrossStrategy):
    """Fast SMA crossing the slow SMA."""

    params = (("fast", 10), ("slow", 50))

    def make_pair(self) -> tuple[bt.LineSeries, bt.LineSeries]:
        return bt.ind.SMA(self.data.close, period=self.p.fast), bt.ind.SMA(
            self.data.close, period=self.p.slow
        )


class EwmaCross(_CrossStrategy):
    """Legacy (schema 1): fast EMA crossing the slow EMA."""

    params = (("fast", 12), ("slow", 26))

    def make_pair(self) -> tuple[bt.LineSeries, bt.LineSeries]:
        return bt.ind.EMA(self.data.close, period=self.p.fast), bt.ind.EMA(
            self.data.close, period=self.p.slow
        )


class MacdCross(_CrossStrategy):
    """MACD line crossing its signal line."""

    params = (("fast", 12), ("slow", 26), ("signal", 9))

    def make_pair(self) -> tuple[bt.LineSeries, bt.LineSeries]:
        macd = bt.ind.MACD(
            self.data.close,
            period_me1=self.p.fast,
            period_me2=self.p.slow,
            period_signal=self.p.signal,
        )
        return macd.macd, macd.signal


class Ewma(EwmaCross):
    """The paper's EWMA: long while the fast EMA is above the slow EMA (level condition)."""

    def wants_entry(self) -> bool:
        return self.fast[0] > self.slow[0]

    def wants_exit(self) -> bool:
        return self.fast[0] < self.slow[0]


class RollingMean(InstrumentedStrategy):
    """The paper's Rolling Window Mean: long while the close is above its rolling mean."""

    params = (("window", 20),)
    line_names = ("mean",)

    def setup_lines(self) -> dict[str, bt.LineSeries]:
        self.mean = bt.ind.SMA(self.data.close, period=self.p.window)
        return {"mean": self.mean}

    def wants_entry(self) -> bool:
        return self.data.close[0] > self.mean[0]

    def wants_exit(self) -> bool:
        return self.data.close[0] < self.mean[0]


class MeanReversion(InstrumentedStrategy):
    """Legacy (schema 1): buy a dip below the rolling mean by a band; exit above the mean."""

    params = (("window", 20), ("band", 0.03))
    line_names = ("mean",)

    def setup_lines(self) -> dict[str, bt.LineSeries]:
        self.mean = bt.ind.SMA(self.data.close, period=self.p.window)
        return {"mean": self.mean}

    def wants_entry(self) -> bool:
        return self.data.close[0] < self.mean[0] * (1.0 - self.p.band)

    def wants_exit(self) -> bool:
        return self.data.close[0] > self.mean[0]


class Rsi(InstrumentedStrategy):
    """Buy oversold RSI, sell overbought RSI."""

    params = (("period", 14), ("lower", 30), ("upper", 70))
    line_names = ("rsi",)

    def setup_lines(self) -> dict[str, bt.LineSeries]:
        self.rsi = bt.ind.RSI(self.data.close, period=self.p.period)
        return {"rsi": self.rsi}

    def wants_entry(self) -> bool:
        return self.rsi[0] < self.p.lower

    def wants_exit(self) -> bool:
        return self.rsi[0] > self.p.upper


STRATEGY_CLASSES: dict[StrategyName, type[InstrumentedStrategy]] = {
    "sma_cross": SmaCross,
    "rolling_mean": RollingMean,
    "ewma": Ewma,
    "rsi": Rsi,
    "macd_cross": MacdCross,
    "mean_reversion": MeanReversion,
    "ewma_cross": EwmaCross,
}
