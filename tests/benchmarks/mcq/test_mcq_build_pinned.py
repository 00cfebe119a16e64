"""The base pool is byte-stable and the streaming bars reader keeps exactly the right rows.

The pinned digest was taken from the JSONL that `tradebench mcq build --all-templates --seed
42` wrote (AAPL 2020-01-01..2024-01-01 on the shared US file) before the builder's feed and
the bars reader were made faster; the path of the bars file is replaced by `BARS` so the pin
does not depend on where the data lives; it was taken again when the distractors moved to
the paper's 7-33% rule and seven templates to the paper's multi-part and money answers
(intended changes of the questions, not of the build's speed work). The
reader's oracle is pandas' filtered full read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tradebench.benchmarks.mcq.bars import bars_digest, read_long_parquet, validate_bars
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.errors import DataError

BASE_POOL_SHA256 = "f36d5c53012980b2fb3e8cd0566d17ba7fc953ea4cb09688ab4620ed65632755"
AAPL_BARS_SHA256 = "0415f89bf1a7549791c49fe264ea3064f331deab44fd9692042163eb789be3ff"


def test_base_pool_jsonl_is_unchanged(base_pool, aapl, tmp_path: Path) -> None:
    ref, _ = aapl
    out = tmp_path / "mcq.jsonl"
    write_jsonl(base_pool.records, out)
    text = out.read_bytes().replace(ref.path.encode(), b"BARS")
    assert len(base_pool.records) == 158
    assert hashlib.sha256(text).hexdigest() == BASE_POOL_SHA256


def test_streaming_read_equals_a_filtered_full_read(aapl, make_ref) -> None:
    ref, bars = aapl
    assert bars_digest(bars) == AAPL_BARS_SHA256
    full = pd.read_parquet(ref.path, filters=[("symbol", "==", "AAPL")])
    full = full.assign(date=pd.to_datetime(full["date"])).set_index("date")
    window = full.loc[(full.index >= "2020-01-01") & (full.index <= "2024-01-01")]
    assert bars_digest(validate_bars(window)) == AAPL_BARS_SHA256


def _long_file(path: Path, dictionary: bool) -> pd.DataFrame:
    """Three symbols interleaved over 400 days, written in small row groups."""
    rng = np.random.default_rng(7)
    dates = pd.bdate_range("2021-01-01", periods=400)
    frame = pd.DataFrame(
        {
            "date": np.repeat(dates.to_numpy(), 3),
            "symbol": np.tile(["AAA", "BBB", "CCC"], len(dates)),
            **{c: rng.uniform(10, 20, 3 * len(dates)) for c in ("open", "high", "low", "close")},
            "volume": rng.integers(1, 10**6, 3 * len(dates)),
        }
    )
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if dictionary:
        table = table.set_column(1, "symbol", table.column("symbol").dictionary_encode())
    pq.write_table(table, path, row_group_size=250)
    return frame


@pytest.mark.parametrize("dictionary", [False, True])
@pytest.mark.parametrize("symbol", ["AAA", "BBB", "CCC"])  # a row group's min, inner, max
def test_reader_keeps_the_symbols_rows_across_row_groups(
    tmp_path: Path, dictionary: bool, symbol: str
) -> None:
    path = tmp_path / "long.parquet"
    frame = _long_file(path, dictionary)
    got = read_long_parquet(path, symbol, dt.date(2021, 3, 1), dt.date(2022, 1, 31))
    want = frame[frame["symbol"] == symbol].set_index("date")
    want = want.loc["2021-03-01":"2022-01-31"]
    assert len(got) == len(want) > 200
    assert (got.index == want.index).all()
    for column in ("open", "high", "low", "close", "volume"):
        assert np.array_equal(got[column].to_numpy(), want[column].to_numpy())


def test_reader_names_a_missing_symbol_and_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "long.parquet"
    _long_file(path, dictionary=True)
    with pytest.raises(DataError, match="'ZZZ' not found"):
        read_long_parquet(path, "ZZZ", dt.date(2021, 1, 1), dt.date(2022, 1, 1))
    wide = tmp_path / "wide.parquet"
    pq.write_table(pa.table({"date": [1, 2], "close": [1.0, 2.0]}), wide)
    with pytest.raises(DataError, match="date and symbol"):
        read_long_parquet(wide, "AAA", dt.date(2021, 1, 1), dt.date(2022, 1, 1))
