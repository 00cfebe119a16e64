"""Load the real CN dataset, build its panel, and step `MarketView` across two years.

Targets: load + panel < 1.5 s; a view step (construct + universe + a 20-day window +
last close) < 1 ms. Run: `python perf/view.py`.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from _common import import_real_cn, timed

from tradebench.data import load_dataset
from tradebench.view import MarketView


def main() -> None:
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cn"
        with timed("import (once, not part of the target)", results):
            import_real_cn(out)
        with timed("load + verify checksums", results):
            ds = load_dataset(out)
        with timed("build panel", results):
            panel = ds.panel
        dates = panel.dates[
            (panel.dates >= np.datetime64("2024-01-01"))
            & (panel.dates < np.datetime64("2026-01-01"))
        ]
        start = time.perf_counter()
        checksum = 0.0
        for day in dates:
            view = MarketView(ds, day)
            members = view.member_mask()
            window = view.window("adj_close", 20)
            checksum += float(np.nansum(view.last("close")[members])) + window.shape[0]
        per_step = (time.perf_counter() - start) / len(dates)
    load = results["load + verify checksums"] + results["build panel"]
    print(f"dataset: {panel.symbols.size} symbols x {panel.dates.size} days")
    for label, seconds in results.items():
        print(f"{label:>40}: {seconds:8.3f} s")
    print(f"{'load + panel':>40}: {load:8.3f} s   (target < 1.5 s)")
    print(f"{'view step':>40}: {per_step * 1e3:8.4f} ms over {len(dates)} steps (target < 1 ms)")
    print(f"{'ratio to targets':>40}: load {1.5 / load:.1f}x, step {1e-3 / per_step:.0f}x")
    assert checksum > 0


if __name__ == "__main__":
    main()
