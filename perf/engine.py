"""Equal-weight daily rebalancing over the CSI300 point-in-time universe, 2024-01-02 ..
2026-04-10, on the real data: time the simulation itself (data loading excluded).

Target: < 1 s, i.e. >= 40x Qlib 0.9.7's `backtest()` (about 40 s for the same job on a
2-core machine). When pyqlib is not installed the Qlib figure printed is that reference,
labelled as such, not a measurement. Run: `python perf/engine.py`.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _common import shared_data
from tradebench.agents.baselines import EqualWeightAgent, MomentumTopKAgent
from tradebench.data import load_dataset
from tradebench.data.importers.long import LongImport, import_long
from tradebench.runs.backtest import run_backtest_sync
from tradebench.runs.execute import score

QLIB_REFERENCE_S = 40.0


def main() -> None:
    data = shared_data()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cn"
        import_long(LongImport(
            source=data / "cn" / "csi300_members_daily_2018_2026.parquet", out=out,
            index_file=data / "cn" / "csi300_index_daily.csv", index_symbol="SH000300",
            membership_file=data / "universe" / "csi300_membership.csv",
            start="2023-06-01", end="2026-05-08"))
        ds = load_dataset(out)
        ds.panel  # built once; not part of the simulation time
        runs = [("equal_weight daily", EqualWeightAgent(every=1)),
                ("equal_weight weekly", EqualWeightAgent(every=5)),
                ("momentum_topk weekly", MomentumTopKAgent())]
        for label, agent in runs:
            start = time.perf_counter()
            result = run_backtest_sync(ds, agent, "2024-01-02", "2026-04-10")
            elapsed = time.perf_counter() - start
            m = score(result)
            print(f"{label:>22}: {elapsed:6.3f} s  {len(result.steps)} steps, "
                  f"{len(result.orders):,} orders, return {m['total_return']:+.3f}, "
                  f"cash ratio {m['cash_ratio']:.3f}")
            if label == "equal_weight daily":
                daily = elapsed
    try:
        import qlib  # noqa: F401

        note = "pyqlib is installed, but a side-by-side Qlib run is not scripted yet"
    except ImportError:
        note = "pyqlib not installed"
    print(f"Qlib backtest() reference: {QLIB_REFERENCE_S:.0f} s ({note}; reference figure)")
    print(f"ratio vs reference: {QLIB_REFERENCE_S / daily:.0f}x (target >= 40x, < 1 s)")


if __name__ == "__main__":
    main()
