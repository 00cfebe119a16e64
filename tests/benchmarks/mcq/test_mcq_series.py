"""The checker reads bars on its own (DuckDB into NumPy) and must see exactly what the
builder's pyarrow-and-pandas loader sees: the same arrays, the same digest, the same
refusals, in the same words."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tradebench.benchmarks.mcq.bars import bars_digest, load_bars
from tradebench.benchmarks.mcq.check.series import Bars, load_series
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.errors import DataError

START, END = dt.date(2021, 1, 4), dt.date(2021, 6, 30)


def _same(ref: DataRef) -> Bars:
    """Both loaders on `ref`: equal arrays (NaN-free prices, so exact) and digests."""
    frame = load_bars(ref, verify=False)
    series = load_series(ref, verify=False)
    expected = Bars.from_frame(frame)
    for name in ("dates", "open", "high", "low", "close", "volume"):
        got, want = getattr(series, name), getattr(expected, name)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), name
    assert series.digest() == bars_digest(frame)
    return series


def test_the_shared_file_reads_the_same_for_every_symbol_window(aapl, make_ref) -> None:
    ref, bars = aapl
    assert load_series(ref).digest() == ref.bars_sha256 == bars_digest(bars)
    for symbol in ("AAPL", "MSFT", "JPM"):
        base = make_ref(symbol)
        _same(base)
        _same(base.model_copy(update={"start": dt.date(2022, 3, 5), "end": dt.date(2023, 1, 2)}))


def _write(path: Path, dates: pa.Array, n: int | None = None, drop: str | None = None) -> Path:
    """A long file: symbol X over `dates` with varied prices, and symbol Y beside it."""
    n = len(dates) if n is None else n
    rng = np.random.default_rng(7)
    close = 100 + np.cumsum(rng.normal(0, 1, n))
    columns = {
        "date": pa.concat_arrays([dates, dates]),
        "symbol": pa.array(["X"] * n + ["Y"] * n).dictionary_encode(),
        "open": np.concatenate([close + 0.5, close]),
        "high": np.concatenate([close + 1, close + 1]),
        "low": np.concatenate([close - 1, close - 1]),
        "close": np.concatenate([close, close]),
        "volume": np.arange(2 * n, dtype=np.int64),
    }
    if drop:
        del columns[drop]
    pq.write_table(pa.table(columns), path, row_group_size=50)
    return path


def _ref(path: Path) -> DataRef:
    return DataRef(kind="long_parquet", path=str(path), symbol="X", start=START, end=END)


def _days(n: int, start: str = "2021-01-01") -> np.ndarray:
    return np.arange(np.datetime64(start), np.datetime64(start) + n).astype("datetime64[D]")


def test_date_types_times_of_day_and_disorder_read_the_same(tmp_path: Path) -> None:
    days = _days(200)
    shuffled = np.random.default_rng(1).permutation(days)
    cases = {
        "date32": pa.array(days, pa.date32()),
        "us": pa.array(days.astype("datetime64[us]"), pa.timestamp("us")),
        "noon_ns": pa.array(days.astype("datetime64[ns]") + np.timedelta64(12, "h")),
        "shuffled": pa.array(shuffled.astype("datetime64[ms]"), pa.timestamp("ms")),
    }
    for name, dates in cases.items():
        series = _same(_ref(_write(tmp_path / f"{name}.parquet", dates)))
        assert len(series.dates) > 60 and np.all(np.diff(series.dates) > np.timedelta64(0))


@pytest.mark.parametrize(
    "flaw", ["duplicate", "nan", "short", "missing", "absent", "zone", "corrupt", "truncated"]
)
def test_a_flawed_table_is_refused_by_both_with_the_same_line(tmp_path: Path, flaw: str) -> None:
    days = _days(200)
    dates = pa.array(days, pa.date32())
    if flaw == "zone":
        dates = pa.array(days.astype("datetime64[us]"), pa.timestamp("us", tz="UTC"))
    if flaw == "duplicate":
        dates = pa.array(np.where(np.arange(200) == 30, days[29], days), pa.date32())
    path = _write(tmp_path / "x.parquet", dates, drop="low" if flaw == "missing" else None)
    ref = _ref(path)
    if flaw == "nan":
        table = pq.read_table(path)
        close = table.column("close").to_numpy().copy()
        close[40] = np.nan
        pq.write_table(table.set_column(5, "close", pa.array(close)), path)
    if flaw == "short":
        ref = ref.model_copy(update={"end": dt.date(2021, 2, 10)})
    if flaw == "absent":
        ref = ref.model_copy(update={"symbol": "Z"})
    if flaw == "corrupt":
        path.write_bytes(b"date,symbol,open\n2021-01-04,X,1.0\n")  # CSV under a .parquet name
    if flaw == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError) as pandas_side:
        load_bars(ref, verify=False)
    with pytest.raises(DataError) as numpy_side:
        load_series(ref, verify=False)
    if flaw in ("corrupt", "truncated"):  # each reader's own reason inside the parentheses
        said = [str(e.value).split(" (")[0] for e in (pandas_side, numpy_side)]
        assert said == [f"bars file {path} is not a readable Parquet file"] * 2
        assert all("\n" not in str(e.value) for e in (pandas_side, numpy_side))
        return
    assert str(numpy_side.value) == str(pandas_side.value)


def test_a_corrupt_bars_file_is_one_error_line_for_build_and_check(
    base_pool, tmp_path: Path
) -> None:
    """Both verbs, as a user runs them, print one `error:` line and no traceback."""
    from tradebench.benchmarks.mcq.records import write_jsonl

    bad = tmp_path / "bars.parquet"
    bad.write_bytes(b"PAR1 not really")
    record = base_pool.records[0]
    data = record.config.data.model_copy(update={"path": str(bad)})
    write_jsonl(
        [record.model_copy(update={"config": record.config.model_copy(update={"data": data})})],
        tmp_path / "q.jsonl",
    )
    build = ["mcq", "build", "--bars", str(bad), "--symbol", "AAPL", "--start", "2020-01-01"]
    build += ["--end", "2024-01-01", "--all-templates", "-o", str(tmp_path / "out.jsonl")]
    for args in (build, ["mcq", "check", str(tmp_path / "q.jsonl")]):
        done = subprocess.run(
            [sys.executable, "-m", "tradebench.cli", *args], capture_output=True, text=True
        )
        assert done.returncode == 1, done.stderr[-2000:]
        assert "Traceback" not in done.stderr + done.stdout
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        assert lines and lines[0].startswith("error:") and "not a readable Parquet" in lines[0]


def test_changed_bars_fail_the_digest(aapl) -> None:
    ref, _ = aapl
    with pytest.raises(DataError, match="digest mismatch"):
        load_series(ref.model_copy(update={"bars_sha256": "0" * 64}))


def test_a_check_process_imports_no_pandas(base_pool, tmp_path: Path) -> None:
    """`mcq check` as a user runs it loads none of the builder's libraries (a module set)."""
    from tradebench.benchmarks.mcq.records import write_jsonl

    path = tmp_path / "mcq.jsonl"
    write_jsonl(base_pool.records[:20], path)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tradebench.cli", "mcq", "check", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "20/20 questions agree" in done.stdout
    loaded = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "duckdb" in loaded and not {"pandas", "pyarrow", "backtrader"} & loaded


def test_a_dataset_folder_reads_the_same_through_the_checkers_own_reader(
    synth_dataset_dir: Path,
) -> None:
    """A dataset folder is read by the checker's own code (manifest, checksum, DuckDB,
    adjustment) and gives exactly the builder's arrays."""
    from tradebench.data import load_dataset

    symbol = str(load_dataset(synth_dataset_dir).bars["symbol"].iloc[0])
    ref = DataRef(
        kind="dataset",
        path=str(synth_dataset_dir),
        symbol=symbol,
        start=dt.date(2020, 1, 1),
        end=dt.date(2023, 12, 31),
    )
    assert len(_same(ref).dates) >= 60
    assert len(_same(ref.model_copy(update={"adjusted": False})).dates) >= 60


def test_text_dates_are_read_by_the_checker_itself(tmp_path: Path) -> None:
    """ISO dates stored as text (with or without a time) read the same in both loaders."""
    days = _days(200)
    plain = pa.array([str(d) for d in days])
    timed = pa.array([f"{d} 00:00:00" for d in days])
    for name, dates in {"text": plain, "text_time": timed}.items():
        _same(_ref(_write(tmp_path / f"{name}.parquet", dates)))
    other = pa.array([f"{str(d)[5:7]}/{str(d)[8:]}/{str(d)[:4]}" for d in days])
    with pytest.raises(DataError, match="not ISO dates"):
        load_series(_ref(_write(tmp_path / "us_style.parquet", other)), verify=False)
