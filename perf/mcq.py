"""MCQ benchmark speed: build and independently check the full base pool in one process.

Prints the time of each phase, the backtests run (strategy configs plus the comparative
templates' alternative configs), the distractor distribution, the answer letters (balanced
by construction) beside the answer's rank among the option values (what balancing leaves to
exploit), and the ratio against the public implementation's 8.7 s for build + check (AAPL
2020-2024, seed 42).
Run: python perf/mcq.py [path/to/sp500_daily_adj_2005_2025.parquet]
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

from tradebench.benchmarks.mcq.bars import resolve
from tradebench.benchmarks.mcq.build.builder import BuildSpec, build
from tradebench.benchmarks.mcq.build.stats import distractor_stats
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.records import read_jsonl, write_jsonl

PUBLIC_BUILD_PLUS_CHECK_S = 8.7
DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/us/sp500_daily_adj_2005_2025.parquet"


def main() -> None:
    """Time load, build (with JSONL write) and check (re-reading the file and the bars)."""
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    ref = DataRef(
        kind="long_parquet",
        path=str(source),
        symbol="AAPL",
        start=dt.date(2020, 1, 1),
        end=dt.date(2024, 1, 1),
    )
    t0 = time.perf_counter()
    ref, bars = resolve(ref)
    t1 = time.perf_counter()
    result = build(BuildSpec(data=ref, seed=42), bars)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "mcq.jsonl"
        write_jsonl(result.records, out)
        t2 = time.perf_counter()
        report = check_records(read_jsonl(out))
        t3 = time.perf_counter()
    build_s, check_s = t2 - t1, t3 - t2
    total = build_s + check_s
    st = distractor_stats(result.records)
    print(f"bars load (parquet, once)      {t1 - t0:6.2f} s")
    print(
        f"build {len(result.records)} questions          {build_s:6.2f} s  "
        f"({result.backtests} backtrader backtests: 5 strategies + alternatives)"
    )
    print(
        f"check {len(report.verdicts)} questions          {check_s:6.2f} s  "
        f"({report.backtests} independent re-runs, bars re-read from the config)"
    )
    print(
        f"build + check                  {total:6.2f} s  target < 5 s; public "
        f"{PUBLIC_BUILD_PLUS_CHECK_S} s -> {PUBLIC_BUILD_PLUS_CHECK_S / total:.1f}x faster"
    )
    print(
        f"checker agreement              {len(report.verdicts) - len(report.failures)}"
        f"/{len(report.verdicts)}"
    )
    print(f"skipped (reported)             {len(result.skipped)} of 165 template x strategy")
    print(
        f"nearest distractor (n={st.numeric})   p10 {st.nearest_p10:.1%}  median "
        f"{st.nearest_median:.1%}  p90 {st.nearest_p90:.1%}  max option/answer "
        f"{st.max_spread:.2f}x"
    )
    print(f"answer letters (balanced)      {st.letters}")
    print(f"answer's value rank (numeric)  {st.value_ranks}")


if __name__ == "__main__":
    main()
