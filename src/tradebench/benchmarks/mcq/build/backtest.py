"""Run one backtrader backtest from a `BacktestConfig` and return its logs as DataFrames.

This is the builder's code path. The checker never imports it: it re-runs the same config
through its own simulator (`check/simulate.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from tradebench.benchmarks.mcq.build._backtrader import backtrader as bt
from tradebench.benchmarks.mcq.build.strategies import STRATEGY_CLASSES
from tradebench.benchmarks.mcq.config import BacktestConfig

FILL_COLUMNS = ["date", "side", "size", "price", "commission", "cash_after"]
TRADE_COLUMNS = ["entry_date", "exit_date", "entry_price", "pnl", "pnlcomm", "barlen"]
REFUSAL_COLUMNS = ["date", "side", "size", "status"]


@dataclass(frozen=True)
class BacktestLog:
    """Everything the instrumented strategy logged, plus optional analyzer results.

    `snapshots` is indexed by date (one row per bar) with columns cash, value, position
    (shares at the close, after that day's fills) and the strategy's indicator lines
    (NaN before they are defined). `fills` are completed orders in time order with the
    broker cash right after each fill; `trades` are closed round trips as backtrader's
    `Trade` reports them (`pnl` gross, `pnlcomm` net of both commissions, `barlen`).
    """

    config: BacktestConfig
    bars: pd.DataFrame
    snapshots: pd.DataFrame
    fills: pd.DataFrame
    trades: pd.DataFrame
    refusals: pd.DataFrame
    analyzers: dict[str, Any] = field(default_factory=dict)


class _ListFeed(bt.feeds.PandasData):
    """backtrader's `PandasData` with its bars read from Python lists made once at start.

    `PandasData` indexes the frame with `.iloc` once per column per bar, which was a third
    of a build; here each line's values (the same float64s, the same `date2num` of each
    index stamp, NaN for `openinterest`) are listed once. A preloading run (backtrader's
    default) appends each list to its line's buffer in one step, which leaves the buffers
    exactly as the bar-by-bar `load` would (no filters, time zone or date limits are set
    here); a run without preload loads them bar by bar. Every backtest is unchanged.
    """

    def start(self) -> None:
        super().start()
        frame = self.p.dataname
        self._rows = [
            (getattr(self.lines, name), frame.iloc[:, col].to_numpy().tolist())
            for name in self.getlinealiases()
            if name != "datetime" and (col := self._colmapping[name]) is not None
        ]
        self._stamps = [bt.date2num(t.to_pydatetime()) for t in frame.index]
        aliases = [name for name in self.getlinealiases() if name != "datetime"]
        self._tick_nulls = dict.fromkeys([*(f"tick_{name}" for name in aliases), "tick_last"])
        self._tick_lines = [(f"tick_{name}", getattr(self.lines, name)) for name in aliases]
        self._tick_lead = (f"tick_{self._getlinealias(0)}", self.lines[0])

    def _tick_nullify(self) -> None:
        """`DataBase._tick_nullify` (every `tick_*` attribute None), in one update."""
        self.__dict__.update(self._tick_nulls)

    def _tick_fill(self, force: bool = False) -> None:
        """`DataBase._tick_fill`: unless a tick was set, each `tick_*` is its line's
        current value and `tick_last` the first line's, set in one pass."""
        state = self.__dict__
        name, lead = self._tick_lead
        if force or state.get(name) is None:
            for attr, line in self._tick_lines:
                state[attr] = line[0]
            state["tick_last"] = lead[0]

    def preload(self) -> None:
        """Fill every line's buffer at once, then rewind as `DataBase.preload` does."""
        limits = self.fromdate > float("-inf") or self.todate < float("inf")
        if self._filters or self._ffilters or self._tzinput or limits or self.buflen():
            super().preload()  # anything the plain append would not reproduce
            return
        n = len(self._stamps)
        filled = {id(line) for line, _ in self._rows}
        for line, values in self._rows:
            line.array.extend(values)
        for line in self.lines:
            if line is self.lines.datetime:
                line.array.extend(self._stamps)
            elif id(line) not in filled:
                line.array.extend([float("nan")] * n)
        self._idx = n - 1
        self._last()
        self.home()

    def _load(self) -> bool:
        self._idx += 1
        if self._idx >= len(self._stamps):
            return False
        for line, values in self._rows:
            line[0] = values[self._idx]
        self.lines.datetime[0] = self._stamps[self._idx]
        return True


def list_feed(bars: pd.DataFrame) -> _ListFeed:
    """The feed of every backtest here: `bars` as backtrader's `PandasData` reads them."""
    return _ListFeed(dataname=bars, openinterest=None)


def cerebro_for(feed: bt.feeds.DataBase, config: BacktestConfig, analyzers: bool) -> bt.Cerebro:
    """A `Cerebro` set up as `config` says (broker, commission, strategy) on `feed`."""
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.adddata(feed)
    cerebro.broker.setcash(config.initial_cash)
    cerebro.broker.setcommission(commission=config.commission_rate)
    sizing = config.sizing
    cerebro.addstrategy(
        STRATEGY_CLASSES[config.strategy.name],
        sizing_kind=sizing.kind,
        percent=sizing.percent,
        stake=sizing.stake,
        **config.strategy.params,
    )
    if analyzers:
        cerebro.addanalyzer(bt.analyzers.DrawDown, _name="drawdown")
        cerebro.addanalyzer(
            bt.analyzers.Returns, _name="returns", timeframe=bt.TimeFrame.Days, tann=252
        )
        cerebro.addanalyzer(bt.analyzers.TradeAnalyzer, _name="trades")
    return cerebro


def run_backtest(
    bars: pd.DataFrame, config: BacktestConfig, analyzers: bool = False
) -> BacktestLog:
    """Run the configured strategy over `bars` with backtrader and collect its logs.

    With `analyzers`, backtrader's DrawDown, Returns (daily, 252 per year) and
    TradeAnalyzer results are attached, so tests can compare answers with them.
    """
    feed = list_feed(bars)
    strat = cerebro_for(feed, config, analyzers).run()[0]
    cls = STRATEGY_CLASSES[config.strategy.name]
    snap = pd.DataFrame(
        strat.snapshots, columns=["date", "cash", "value", "position", *cls.line_names]
    )
    # Snapshots carry the bar's `date2num` stamp; each is one of the feed's, made from a
    # bar's date, which is the date it stands for.
    day = dict(zip(feed._stamps, bars.index, strict=True))
    snap["date"] = pd.DatetimeIndex([day[stamp] for stamp in snap["date"]])
    snap = snap.set_index("date")
    fills = pd.DataFrame(strat.fills, columns=FILL_COLUMNS)
    fills["date"] = pd.to_datetime(fills["date"]).dt.normalize()
    trades = pd.DataFrame(strat.closed, columns=TRADE_COLUMNS)
    for col in ("entry_date", "exit_date"):
        trades[col] = pd.to_datetime(trades[col]).dt.normalize()
    refusals = pd.DataFrame(strat.refusals, columns=REFUSAL_COLUMNS)
    results: dict[str, Any] = {}
    if analyzers:
        results = {
            name: strat.analyzers.getbyname(name).get_analysis()
            for name in ("drawdown", "returns", "trades")
        }
    return BacktestLog(config, bars, snap, fills, trades, refusals, results)
