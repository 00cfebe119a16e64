"""The builder's feed runs every strategy exactly as backtrader's own `PandasData` does.

`build/backtest.py`'s feed lists each column once, fills its line buffers in one step when
backtrader preloads and sets the bar's ticks in one pass. Each strategy (the five and the
two schema-1 rules) is run on the real AAPL bars through it and through backtrader's stock
`PandasData`, preloaded and vectorised (the builder's mode) and bar by bar: every logged
snapshot, fill, refusal and closed trade must be the same, to the last bit.
"""

from __future__ import annotations

import pytest

from tradebench.benchmarks.mcq.build._backtrader import backtrader as bt
from tradebench.benchmarks.mcq.build.backtest import cerebro_for, list_feed, run_backtest
from tradebench.benchmarks.mcq.build.builder import BuildSpec, strategy_config
from tradebench.benchmarks.mcq.config import ALL_STRATEGIES

MODES = {"preloaded": {"preload": True, "runonce": True}, "bar by bar": {"preload": False}}


def _logs(feed, config, mode: str) -> str:
    """Everything the instrumented strategy logged, as exact text (NaN reads `nan`)."""
    strat = cerebro_for(feed, config, analyzers=False).run(**MODES[mode])[0]
    return repr((strat.snapshots, strat.fills, strat.refusals, strat.closed))


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("name", list(ALL_STRATEGIES))
def test_the_feed_runs_as_backtraders_pandas_feed(aapl, name: str, mode: str) -> None:
    ref, bars = aapl
    config = strategy_config(BuildSpec(data=ref, seed=42, strategies=(name,)), name)
    ours = _logs(list_feed(bars), config, mode)
    stock = _logs(bt.feeds.PandasData(dataname=bars, openinterest=None), config, mode)
    assert ours == stock
    assert "BUY" in ours  # the strategy traded, so fills and cash were compared too


def test_snapshots_are_dated_by_their_bars(aapl) -> None:
    ref, bars = aapl
    log = run_backtest(bars, strategy_config(BuildSpec(data=ref, seed=42), "sma_cross"))
    assert log.snapshots.index.equals(bars.index)
