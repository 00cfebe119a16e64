"""One symbol's rows of a long-format Parquet bar file, read with pyarrow (the builder's
reader; the independent checker reads the file with DuckDB, `mcq.check.series`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tradebench.benchmarks.mcq.bar_rules import (
    OHLCV,
    file_not_found,
    not_long_format,
    symbol_absent,
    unreadable,
    zoned_dates,
)

_BATCH_ROWS = 16_384
"""Rows per batch when streaming a long Parquet file (memory, not results, depends on it)."""


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


def symbol_table(path: Path, symbol: str) -> pa.Table:
    """`_symbol_table`, with a file pyarrow cannot read refused in one line."""
    try:
        return _symbol_table(path, symbol)
    except (pa.ArrowException, OSError) as exc:
        if not path.exists():
            raise file_not_found(path) from None
        raise unreadable(path, str(exc).strip().splitlines()[0]) from None


def _symbol_table(path: Path, symbol: str) -> pa.Table:
    """The `date` and OHLCV columns (those present) of `symbol`'s rows, in file order.

    Only the row groups whose statistics admit the symbol are read, one column at a time
    in small batches (the symbol column first, for the row mask), so a 2-million-row file
    costs a few MB of decoded data rather than the whole table; the rows kept are those
    of a filtered full read.
    """
    if not path.exists():
        raise file_not_found(path)
    parquet = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 16)
    schema = parquet.schema_arrow
    if "date" not in schema.names or "symbol" not in schema.names:
        raise not_long_format(path)
    stamp = schema.field("date").type
    if pa.types.is_timestamp(stamp) and stamp.tz is not None:
        raise zoned_dates(path)

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
        raise symbol_absent(symbol, path)
    return pa.table(
        {c: pa.chunked_array(parts, type=schema.field(c).type) for c, parts in kept.items()}
    )
