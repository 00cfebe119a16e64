"""Equal-weight daily rebalancing over the CSI300 point-in-time universe, 2024-01-02 ..
2026-04-10, on the real data: time the simulation, and Qlib 0.9.7's `backtest()` on the
same job in the same process when pyqlib is installed.

Target: >= 100x Qlib's `backtest()` on the simulation alone. A ratio is printed only when
both sides ran here; without pyqlib the script prints our figures and says the comparison
did not run. Our baselines alone are timed `--repeats` times (at least 3). The two sides
are then timed in `--pairs` alternated pairs (at least 3) (the order swaps each pair), in wall
and CPU time, and each ratio is printed as the median of the pairs' ratios with its range,
so a burst of load on one side shows as spread, not as a different figure. Two ratios:
simulation alone (our `run_backtest_sync` against `backtest()`, market data in memory on
both sides), and with the data preparation counted on both sides (our `load_dataset` plus
panel build against Qlib's `Exchange` build).

The Qlib job: a `WeightStrategyBase` subclass that targets 1/n of `risk_degree=0.98` of the
portfolio value in each of the n names of our `EqualWeightAgent`'s universe for day T
(CSI300 members at T that traded on T-1, handed to Qlib as the signal dated T-1), Qlib's
default `OrderGenWOInteract` (target shares from T-1's close, lots rounded down), a daily
`SimulatorExecutor`, fills at the open, 5/15 bps, CNY 5 minimum, 100-share lots and a
±9.5% limit on every board. The exchange (Qlib's quote loading, from the day before the
window) is built before `backtest()` and timed apart, as our dataset load and panel build
are. Results differ by design (docs/backtest.md, "Conformance with Qlib").
Run: `python perf/engine.py [--repeats N] [--pairs M]`. pyqlib 0.9.7 is not in the
main interpreter; a side venv that shares its packages works (docs/backtest.md, "Speed"):
`python -m venv --system-site-packages ~/.cache/tradebench/qlib-venv &&
~/.cache/tradebench/qlib-venv/bin/pip install pyqlib==0.9.7 &&
~/.cache/tradebench/qlib-venv/bin/pip uninstall -y pyarrow` (its pins pull an older
pyarrow; removing it keeps the main one), then run this script with
`~/.cache/tradebench/qlib-venv/bin/python`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from _common import REPEATS, alternate, import_real_cn, ratio_spread, repeat_timed, spread

from tradebench.agents.baselines import EqualWeightAgent, MomentumTopKAgent, tradable_members
from tradebench.data import load_dataset
from tradebench.data.dataset import Dataset
from tradebench.data.exporters.qlib import QlibExport, export_qlib
from tradebench.runs.broker.backtest import score
from tradebench.runs.broker.engine import run_backtest_sync, trading_days
from tradebench.view import MarketView

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


def load_ours(out: Path) -> Dataset:
    """Our data preparation: open the dataset and build its panel (the counterpart of
    Qlib's exchange build)."""
    ds = load_dataset(out)
    _ = ds.panel
    return ds


def run_ours(ds: Dataset, repeats: int) -> list[float]:
    """Time our three baseline runs `repeats` times each; returns the daily equal-weight
    times in seconds."""
    runs = [
        ("equal_weight daily", EqualWeightAgent(every=1)),
        ("equal_weight weekly", EqualWeightAgent(every=5)),
        ("momentum_topk weekly", MomentumTopKAgent()),
    ]
    daily: list[float] = []
    for label, agent in runs:
        times, result = repeat_timed(lambda a=agent: run_backtest_sync(ds, a, START, END), repeats)
        m = score(result)
        print(
            f"{label:>22}: {spread(times)} s  {len(result.steps)} steps, "
            f"{len(result.orders):,} orders, return {m['total_return']:+.3f}, "
            f"cash ratio {m['cash_ratio']:.3f}"
        )
        if label == "equal_weight daily":
            daily = times
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


@dataclass
class QlibJob:
    """The Qlib side, prepared once: `build` makes a fresh exchange, `run` one backtest."""

    export_s: float
    build: Callable[[], Any]
    run: Callable[[Any], pd.DataFrame]


def prepare_qlib(ds: Dataset, root: Path) -> QlibJob:
    """Export the dataset once and initialise Qlib; returns the exchange build and the
    `backtest()` call as functions (a fresh exchange and strategy each time)."""
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
    # quotes from T-1 of the first day: the order generator reads the signal day's close
    first = pd.Timestamp(ds.panel.dates[trading_days(ds.panel, START, END)[0] - 1])
    executor = {
        "class": "SimulatorExecutor",
        "module_path": "qlib.backtest.executor",
        "kwargs": {"time_per_step": "day", "generate_portfolio_metrics": True},
    }

    def build() -> Any:
        return Exchange(freq="day", start_time=first, end_time=END, codes="all", **EXCHANGE_KWARGS)

    def run(exchange: Any) -> pd.DataFrame:
        portfolio, _ = backtest(
            start_time=START,
            end_time=END,
            strategy=EqualWeightStrategy(signal=signal, risk_degree=0.98),
            executor=executor,
            benchmark="SH000300",
            account=CASH,
            exchange_kwargs={"exchange": exchange},
        )
        return portfolio["1day"][0]

    return QlibJob(export, build, run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="our timed repeats (>= 3)")
    parser.add_argument("--pairs", type=int, default=REPEATS, help="alternated pairs (>= 3)")
    args = parser.parse_args()
    repeats, pairs = max(args.repeats, 3), max(args.pairs, 3)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cn"
        import_real_cn(out, start="2023-06-01", end="2026-05-08")
        load, ds = repeat_timed(lambda: load_ours(out), repeats)
        print(f"{'load_dataset + panel':>22}: {spread(load)} s  (data preparation)")
        run_ours(ds, repeats)
        if importlib.util.find_spec("qlib") is None:
            print(
                "Qlib comparison did not run: pyqlib is not installed in this process, "
                "so no ratio is printed (install the `qlib` extra to measure both sides)."
            )
            return
        job = prepare_qlib(ds, Path(tmp) / "qlib")
        agent = EqualWeightAgent(every=1)
        exchanges: list[Any] = []
        reports: list[pd.DataFrame] = []
        # the simulation alone: the exchange is built outside the timed call on Qlib's side,
        # as our panel is; the two sides alternate, wall and CPU time per call
        ours_sim, qlib_sim = alternate(
            lambda: run_backtest_sync(ds, agent, START, END),
            lambda: reports.append(job.run(exchanges.pop() if exchanges else job.build())),
            pairs,
        )
        # with data preparation on both sides: load + panel + run against build + backtest()
        ours_all, qlib_all = alternate(
            lambda: run_backtest_sync(load_ours(out), agent, START, END),
            lambda: job.run(job.build()),
            pairs,
        )
    report = reports[-1]
    ret = report["account"].iloc[-1] / CASH - 1.0
    cash = (report["cash"] / report["account"]).mean()
    walls = lambda rows: [w for w, _ in rows]  # noqa: E731
    print(
        f"Qlib 0.9.7 equal_weight daily: backtest() {spread(walls(qlib_sim))} s "
        f"(exchange built beforehand), export {job.export_s:.3f} s (once, not counted); "
        f"return {ret:+.3f}, cash ratio {cash:.3f}"
    )
    print(f"ours equal_weight daily (alternated): {spread(walls(ours_sim))} s")
    print(f"simulation alone, Qlib / ours: {ratio_spread(qlib_sim, ours_sim)}")
    print(f"with data preparation, Qlib / ours: {ratio_spread(qlib_all, ours_all)}")
    print("target >= 100x on the simulation alone")


if __name__ == "__main__":
    main()
