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
    """backtrader's `PandasData` with each bar read from Python lists made once at start.

    `PandasData` indexes the frame with `.iloc` once per column per bar, which was a third
    of a build; the values (the same float64s, the same `date2num` of each index stamp) and
    so every backtest are unchanged.
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

    def _load(self) -> bool:
        self._idx += 1
        if self._idx >= len(self._stamps):
            return False
        for line, values in self._rows:
            line[0] = values[self._idx]
        self.lines.datetime[0] = self._stamps[self._idx]
        return True


def _cerebro(bars: pd.DataFrame, config: BacktestConfig, analyzers: bool) -> bt.Cerebro:
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.adddata(_ListFeed(dataname=bars, openinterest=None))
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
    strat = _cerebro(bars, config, analyzers).run()[0]
    cls = STRATEGY_CLASSES[config.strategy.name]
    snap = pd.DataFrame(
        strat.snapshots, columns=["date", "cash", "value", "position", *cls.line_names]
    )
    snap["date"] = pd.to_datetime(snap["date"])
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
