"""Daily OHLCV bars for the MCQ benchmark: loading, validation, digest and CSV export.

The builder and the checker only ever see a plain OHLCV DataFrame indexed by `date`; this
module is the one place that knows where such a frame comes from.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tradebench.benchmarks.mcq.config import DataRef
from tradebench.data import load_dataset
from tradebench.errors import DataError

OHLCV = ("open", "high", "low", "close", "volume")
_BATCH_ROWS = 16_384
"""Rows per batch when streaming a long Parquet file (memory, not results, depends on it)."""


def validate_bars(bars: pd.DataFrame) -> pd.DataFrame:
    """Return a clean copy: `date` index (sorted, unique), float64 OHLCV, no NaN prices.

    Raises `DataError` saying what is wrong, because a silent fix would change answers.
    """
    missing = [c for c in OHLCV if c not in bars.columns]
    if missing:
        raise DataError(f"bars lack columns {missing}; expected {list(OHLCV)}")
    out = bars.loc[:, list(OHLCV)].astype("float64").copy()
    out.index = pd.DatetimeIndex(pd.to_datetime(bars.index)).as_unit("ns").normalize()
    out.index.name = "date"
    out = out.sort_index()
    if out.index.has_duplicates:
        raise DataError("bars have duplicate dates; de-duplicate the source first")
    if out[["open", "high", "low", "close"]].isna().any().any():
        raise DataError("bars have NaN prices; drop suspended days before building questions")
    if len(out) < 60:
        raise DataError(f"only {len(out)} bars in the window; use a window of 60+ trading days")
    return out


def bars_digest(bars: pd.DataFrame) -> str:
    """SHA-256 of the canonical bar table (dates as int64 ns, OHLCV as little-endian float64)."""
    h = hashlib.sha256()
    h.update(bars.index.as_unit("ns").asi8.astype("<i8").tobytes())
    for col in OHLCV:
        h.update(np.ascontiguousarray(bars[col].to_numpy(dtype="<f8")).tobytes())
    return h.hexdigest()


def _window(frame: pd.DataFrame, start: dt.date, end: dt.date) -> pd.DataFrame:
    idx = pd.DatetimeIndex(frame.index)
    mask = (idx >= pd.Timestamp(start)) & (idx <= pd.Timestamp(end))
    return frame.loc[mask]


def _symbol_rows(column: pa.Array, symbol: str) -> pa.Array:
    """Boolean mask of `column == symbol`; a dictionary column is compared by its codes."""
    if pa.types.is_dictionary(column.type):
        code = pc.index(column.dictionary, pa.scalar(symbol, column.dictionary.type)).as_py()
        if code < 0:
            return pa.array(np.zeros(len(column), dtype=bool))
        return pc.fill_null(pc.equal(column.indices, code), False)
    return pc.fill_null(pc.equal(column, symbol), False)


def _groups_with(meta: pq.FileMetaData, column: int, symbol: str) -> list[int]:
    """Row groups whose `symbol` statistics admit `symbol` (all groups without statistics)."""
    groups = []
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(column).statistics
        if stats is None or not stats.has_min_max or stats.min <= symbol <= stats.max:
            groups.append(i)
    return groups


def read_long_parquet(path: Path, symbol: str, start: dt.date, end: dt.date) -> pd.DataFrame:
    """Read one symbol's window from a long-format Parquet file (date, symbol, OHLCV).

    Only the row groups whose statistics admit the symbol are read, one column at a time
    in small batches (the symbol column first, for the row mask), so a 2-million-row file
    costs a few MB of decoded data rather than the whole table; the rows kept are those
    of a filtered full read.
    """
    if not path.exists():
        raise DataError(f"bars file {path} not found; pass an existing Parquet file")
    parquet = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 16)
    schema = parquet.schema_arrow
    if "date" not in schema.names or "symbol" not in schema.names:
        raise DataError(f"bars file {path} needs date and symbol columns (long format)")

    def batches(group: int, column: str) -> Iterator[pa.Array]:
        for batch in parquet.iter_batches(
            batch_size=_BATCH_ROWS, row_groups=[group], columns=[column], use_threads=False
        ):
            yield batch.column(0)

    columns = [c for c in ("date", *OHLCV) if c in schema.names]
    kept: dict[str, list[pa.Array]] = {c: [] for c in columns}
    for group in _groups_with(parquet.metadata, schema.names.index("symbol"), symbol):
        mask = pa.concat_arrays([_symbol_rows(b, symbol) for b in batches(group, "symbol")])
        if not pc.any(mask).as_py():
            continue
        for column in columns:
            offset = 0  # batch sizes may differ between columns: slice the mask by position
            for values in batches(group, column):
                kept[column].append(values.filter(mask.slice(offset, len(values))))
                offset += len(values)
            pa.default_memory_pool().release_unused()  # decoded pages go back to the OS
    if not kept["date"]:
        raise DataError(f"symbol {symbol!r} not found in {path}; check its spelling")
    frame = pa.table(
        {c: pa.chunked_array(parts, type=schema.field(c).type) for c, parts in kept.items()}
    ).to_pandas()
    frame = frame.assign(date=pd.to_datetime(frame["date"])).set_index("date")
    return _window(frame, start, end)


def read_dataset(
    path: Path, symbol: str, start: dt.date, end: dt.date, adjusted: bool
) -> pd.DataFrame:
    """Read one symbol's window from a tradebench dataset folder via `tradebench.data`."""
    return load_dataset(path).symbol_bars(symbol, start, end, adjusted=adjusted)


def load_bars(ref: DataRef, *, verify: bool = True) -> pd.DataFrame:
    """Load the bars a `DataRef` names; with `verify`, insist the digest matches the record."""
    path = Path(ref.path)
    if ref.kind == "dataset":
        raw = read_dataset(path, ref.symbol, ref.start, ref.end, ref.adjusted)
    else:
        raw = read_long_parquet(path, ref.symbol, ref.start, ref.end)
    bars = validate_bars(raw)
    if verify and ref.bars_sha256 and bars_digest(bars) != ref.bars_sha256:
        raise DataError(
            f"bars for {ref.symbol} in {path} changed since the questions were built "
            "(digest mismatch); rebuild the questions or restore the original data"
        )
    return bars


def resolve(ref: DataRef) -> tuple[DataRef, pd.DataFrame]:
    """Load the bars of a fresh `DataRef` and return it with its digest filled in."""
    bars = load_bars(ref, verify=False)
    return ref.model_copy(update={"bars_sha256": bars_digest(bars)}), bars


def bars_csv(bars: pd.DataFrame) -> bytes:
    """The bars as CSV text (date,open,high,low,close,volume; full float precision)."""
    frame = bars.reset_index()
    frame["date"] = frame["date"].dt.strftime("%Y-%m-%d")
    return frame.to_csv(index=False, float_format="%.17g").encode()
