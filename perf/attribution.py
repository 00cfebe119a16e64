"""Return attribution and Alpha158-style features on the real CSI300 data.

1. Attribution over 2024-01-02 .. 2026-04-10 for the CSI300 universe with the nine style
   factors: exposures (from a year of history before the window), the VIF screen on the
   calibration year, one WLS regression per day, and the decomposition of a real momentum
   top-k run (simulated first, not timed). Target < 2 s.
2. Alpha158-style features (158) for all 549 names over the whole 2018-2026 calendar.
   Target < 60 s. Also the decision-time cost (one day's features through a view).

Data loading is excluded from both targets. Run: `python perf/attribution.py`.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from _common import import_real_cn, timed

from tradebench.agents.baselines import MomentumTopKAgent
from tradebench.agents.factor.data import prediction_features
from tradebench.attribution.model import build_factor_model
from tradebench.data import load_dataset
from tradebench.features.alpha import alpha_features, inputs_from_panel
from tradebench.metrics.attribution import (
    attribution_summary,
    decompose,
    episode_rows,
    nav_returns,
    pre_return_weights,
)
from tradebench.runs.broker.engine import run_backtest_sync
from tradebench.view import MarketView

START, END = "2024-01-02", "2026-04-10"
CASH = 1_000_000.0


def main() -> None:
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        with timed("import (once, not part of the targets)", results):
            out = import_real_cn(Path(tmp) / "cn")
        with timed("load + panel (not part of the targets)", results):
            ds = load_dataset(out)
            panel = ds.panel
        with timed("momentum top-k run to attribute (not timed)", results):
            run = run_backtest_sync(ds, MomentumTopKAgent(k=50, every=5), START, END)
        with timed("attribution", results):
            model = build_factor_model(panel, START, END)
            rows = episode_rows(model, run.steps["date"])
            weights = pre_return_weights(
                run.positions, run.steps["date"], panel.column_map, len(panel.symbols)
            )
            daily = decompose(model, rows, weights, nav_returns(run.steps["nav"], CASH))
            summary = attribution_summary(daily, model.factors)
        with timed("alpha158", results):
            feats = alpha_features(inputs_from_panel(panel, 0, len(panel.dates)))
        view = MarketView(ds, END)
        prediction_features(view, normalise=False)
        start = time.perf_counter()
        for _ in range(20):
            prediction_features(view, normalise=False)
        per_day = (time.perf_counter() - start) / 20
    print(f"dataset: {panel.symbols.size} symbols x {panel.dates.size} days")
    for label, seconds in results.items():
        print(f"{label:>45}: {seconds:8.3f} s")
    days = len(model.dates)
    attribution, alpha = results["attribution"], results["alpha158"]
    print(
        f"{'attribution':>45}: {attribution:8.3f} s for {days} days x "
        f"{model.fit.n_names.mean():.0f} names, {len(model.factors)} factors kept "
        f"(target < 2 s, {2.0 / attribution:.1f}x)"
    )
    print(
        f"{'alpha158 features':>45}: {alpha:8.3f} s for {feats.values.shape[0]} features x "
        f"{panel.symbols.size} names x {panel.dates.size} days (target < 60 s, "
        f"{60.0 / alpha:.1f}x)"
    )
    print(f"{'features at one decision (view)':>45}: {per_day * 1e3:8.1f} ms")
    kept = ", ".join(model.factors)
    dropped = ", ".join(
        f"{f} ({r}, VIF {v or float('nan'):.2f})" for f, v, r in model.screen.dropped
    )
    print(f"factors kept: {kept}; dropped: {dropped or 'none'}; amount: {model.amount_source}")
    print(
        f"momentum top-k: total {summary['total_return']:.4f} = common {summary['common']:.4f}"
        f" + style {summary['style']:.4f} + selection {summary['selection']:.4f} + trading "
        f"{summary['trading']:.4f} (max daily error {summary['reconciliation_error']:.1e})"
    )
    assert np.isfinite(summary["total_return"])


if __name__ == "__main__":
    main()
