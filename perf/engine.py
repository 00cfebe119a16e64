"""Equal-weight daily rebalancing over the CSI300 point-in-time universe, 2024-01-02 ..
2026-04-10, on the real data: time the simulation itself (data loading excluded).

Target: < 1 s, i.e. >= 40x Qlib 0.9.7's `backtest()`. When pyqlib is installed, the same
job also runs in Qlib on the same data (exported with `export_qlib`) and both times are
measured; otherwise the Qlib figure printed is a reference, labelled as such.

The Qlib job: a `WeightStrategyBase` subclass that targets 1/n of `risk_degree=0.98` of the
portfolio value in each of the n names of our `EqualWeightAgent`'s universe for day T
(CSI300 members at T that traded on T-1, handed to Qlib as the signal dated T-1), Qlib's
default `OrderGenWOInteract` (target shares from T-1's close, lots rounded down), a daily
`SimulatorExecutor`, fills at the open, 5/15 bps, CNY 5 minimum, 100-share lots and a
±9.5% limit on every board. The exchange (Qlib's quote loading, from the day before the
window) is built before the timer, as our panel is, and timed apart. Results differ by
design (docs/backtest.md, "Conformance with Qlib"). Run: `python perf/engine.py`.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from _common import import_real_cn

from tradebench.agents.baselines import EqualWeightAgent, MomentumTopKAgent, tradable_members
from tradebench.data import load_dataset
from tradebench.data.dataset import Dataset
from tradebench.data.exporters.qlib import QlibExport, export_qlib
from tradebench.runs.backtest import score
from tradebench.runs.engine import run_backtest_sync, trading_days
from tradebench.view import MarketView

QLIB_REFERENCE_S = 43.0  # measured by this script with pyqlib 0.9.7 (docs/backtest.md)
START, END = "2024-01-02", "2026-04-10"
CASH = 1_000_000.0
EXCHANGE_KWARGS = {
    "deal_price": "open",
    "open_cost": 0.0005,
    "close_cost": 0.0015,
    "min_cost": 5.0,
    "trade_unit": 100,
    "limit_threshold": 0.095,
}


def run_ours(ds: Dataset) -> float:
    """Time our three baseline runs; returns the daily equal-weight time in seconds."""
    runs = [
        ("equal_weight daily", EqualWeightAgent(every=1)),
        ("equal_weight weekly", EqualWeightAgent(every=5)),
        ("momentum_topk weekly", MomentumTopKAgent()),
    ]
    daily = float("nan")
    for label, agent in runs:
        start = time.perf_counter()
        result = run_backtest_sync(ds, agent, START, END)
        elapsed = time.perf_counter() - start
        m = score(result)
        print(
            f"{label:>22}: {elapsed:6.3f} s  {len(result.steps)} steps, "
            f"{len(result.orders):,} orders, return {m['total_return']:+.3f}, "
            f"cash ratio {m['cash_ratio']:.3f}"
        )
        if label == "equal_weight daily":
            daily = elapsed
    return daily


def equal_weight_signal(ds: Dataset) -> pd.Series:
    """Our equal-weight universe as a Qlib signal: day T's names, dated T-1 (score 1)."""
    panel = ds.panel
    keys: list[tuple[pd.Timestamp, str]] = []
    for t in trading_days(panel, START, END):
        view = MarketView(panel, panel.dates[t], market=ds.market)
        prev = pd.Timestamp(panel.dates[t - 1])
        keys += [(prev, str(s)) for s in panel.symbols[tradable_members(view)]]
    index = pd.MultiIndex.from_tuples(keys, names=["datetime", "instrument"])
    return pd.Series(1.0, index=index, name="score")


@dataclass(frozen=True)
class QlibRun:
    """Wall times (seconds) of the Qlib side and its daily portfolio report."""

    export: float
    build: float
    run: float
    report: pd.DataFrame


def run_qlib(ds: Dataset, root: Path) -> QlibRun:
    """Export, then time Qlib's exchange build and its `backtest()` call."""
    os.environ.setdefault("TQDM_DISABLE", "1")  # Qlib's per-day progress bar
    import qlib
    from qlib.backtest import backtest
    from qlib.backtest.exchange import Exchange
    from qlib.contrib.strategy.signal_strategy import WeightStrategyBase

    class EqualWeightStrategy(WeightStrategyBase):
        """1/n of the risk budget in each name of the day's signal."""

        def generate_target_weight_position(self, score, current, trade_start_time, trade_end_time):
            return {code: 1.0 / len(score) for code in score.index}

    start = time.perf_counter()
    export_qlib(ds, QlibExport(out=root, membership_universe="csi300"))
    export = time.perf_counter() - start
    qlib.init(provider_uri=str(root), region="cn", kernels=2, logging_level="WARNING")
    signal = equal_weight_signal(ds)
    start = time.perf_counter()
    first = pd.Timestamp(ds.panel.dates[trading_days(ds.panel, START, END)[0] - 1])
    # quotes from T-1 of the first day: the order generator reads the signal day's close
    exchange = Exchange(freq="day", start_time=first, end_time=END, codes="all", **EXCHANGE_KWARGS)
    build = time.perf_counter() - start
    strategy = EqualWeightStrategy(signal=signal, risk_degree=0.98)
    executor = {
        "class": "SimulatorExecutor",
        "module_path": "qlib.backtest.executor",
        "kwargs": {"time_per_step": "day", "generate_portfolio_metrics": True},
    }
    start = time.perf_counter()
    portfolio, _ = backtest(
        start_time=START,
        end_time=END,
        strategy=strategy,
        executor=executor,
        benchmark="SH000300",
        account=CASH,
        exchange_kwargs={"exchange": exchange},
    )
    run = time.perf_counter() - start
    return QlibRun(export, build, run, portfolio["1day"][0])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cn"
        import_real_cn(out, start="2023-06-01", end="2026-05-08")
        ds = load_dataset(out)
        _ = ds.panel  # built once; not part of the simulation time
        daily = run_ours(ds)
        try:
            import qlib  # noqa: F401
        except ImportError:
            print(f"Qlib backtest() reference: {QLIB_REFERENCE_S:.0f} s (pyqlib not installed)")
            print(f"ratio vs reference: {QLIB_REFERENCE_S / daily:.0f}x (target >= 40x, < 1 s)")
            return
        q = run_qlib(ds, Path(tmp) / "qlib")
    ret = q.report["account"].iloc[-1] / CASH - 1.0
    cash = (q.report["cash"] / q.report["account"]).mean()
    print(
        f"Qlib 0.9.7 equal_weight daily: backtest() {q.run:6.3f} s (+ {q.build:.3f} s exchange "
        f"build, {q.export:.3f} s export), return {ret:+.3f}, cash ratio {cash:.3f}"
    )
    print(
        f"ratio: {q.run / daily:.0f}x on backtest() alone, {(q.run + q.build) / daily:.0f}x "
        "with the exchange build (target >= 40x, ours < 1 s)"
    )


if __name__ == "__main__":
    main()
