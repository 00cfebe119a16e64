"""Fingerprint the engine's results: SHA-256 of the step, order and position tables.

Runs the daily equal-weight job of `perf/engine.py` (and the weekly and momentum
baselines) on the real data, writes each table to Parquet as `tradebench backtest` does
and prints the hashes. Run it before and after an engine change: equal hashes mean
bit-identical results. Run: `python perf/engine_outputs.py [--out DIR]` (keeps the files
in DIR).
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

from _common import import_real_cn

from tradebench.agents.baselines import EqualWeightAgent, MomentumTopKAgent
from tradebench.data import load_dataset
from tradebench.runs.broker.engine import run_backtest_sync

START, END = "2024-01-02", "2026-04-10"
JOBS = {
    "equal_weight_daily": EqualWeightAgent(every=1),
    "equal_weight_weekly": EqualWeightAgent(every=5),
    "momentum_topk_weekly": MomentumTopKAgent(),
}


def fingerprint(out: Path, data: Path) -> dict[str, str]:
    """`job.table` -> SHA-256 of the table's Parquet file written under `out`."""
    ds = load_dataset(data)
    hashes = {}
    for name, agent in JOBS.items():
        result = run_backtest_sync(ds, agent, START, END)
        for table in ("steps", "orders", "positions"):
            path = out / f"{name}.{table}.parquet"
            getattr(result, table).to_parquet(path, index=False)
            hashes[f"{name}.{table}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the Parquet files here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = import_real_cn(Path(tmp) / "cn", start="2023-06-01", end="2026-05-08")
        out = args.out or Path(tmp) / "tables"
        out.mkdir(parents=True, exist_ok=True)
        for key, digest in fingerprint(out, data).items():
            print(f"{key:>36}  {digest}")


if __name__ == "__main__":
    main()
