"""The checker's own bar loader: a record's bars as NumPy arrays, read with DuckDB.

The builder reads a long-format Parquet file with pyarrow into pandas (`mcq.bars`); the
checker reads the same file with DuckDB straight into NumPy and applies the same rules
(`mcq.bar_rules`) in its own code: the window on the dates as stored, dates floored to the
day, sorted, no duplicate date, no NaN price, at least `MIN_BARS` bars; the digest over
the same bytes proves both saw the same bars. A check therefore loads neither pandas nor
pyarrow. Dates stored as text are cast by DuckDB (ISO dates, with or without a time); a
tradebench dataset folder is read by `dataset_reader`, also the checker's own code: every
input of a check goes through code the builder does not share.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tradebench.benchmarks.mcq.bar_rules import (
    MIN_BARS,
    OHLCV,
    digest_mismatch,
    duplicate_dates,
    file_not_found,
    missing_columns,
    nan_prices,
    not_long_format,
    symbol_absent,
    too_few,
    unreadable,
    zoned_dates,
)
from tradebench.benchmarks.mcq.check.dataset_reader import (
    filled,
    float_column,
    read_dataset_symbol,
)
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.errors import DataError

_DATE_TYPES = ("DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS")
"""DuckDB types of a date column read here (dates without a time zone)."""


@dataclass(frozen=True)
class Bars:
    """Daily bars: dates (datetime64[ns], midnight) and float64 OHLCV, in date order."""

    dates: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray

    @classmethod
    def from_frame(cls, frame: Any) -> Bars:
        """From a validated OHLCV DataFrame indexed by date (the builder's form)."""
        dates = np.asarray(frame.index.as_unit("ns").asi8).view("datetime64[ns]")
        return cls(dates, *(frame[c].to_numpy(dtype="float64") for c in OHLCV))

    def digest(self) -> str:
        """SHA-256 of dates as int64 ns and OHLCV as little-endian float64 (`bars_digest`)."""
        h = hashlib.sha256()
        h.update(self.dates.astype("datetime64[ns]").view("int64").astype("<i8").tobytes())
        for column in OHLCV:
            h.update(np.ascontiguousarray(getattr(self, column), dtype="<f8").tobytes())
        return h.hexdigest()


def _read(path: Path, symbol: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`symbol`'s stored dates (datetime64[ns]) and OHLCV columns of a long Parquet file."""
    import duckdb

    if not path.exists():
        raise file_not_found(path)
    try:
        return _query(duckdb.connect(config={"threads": 1}), path, symbol)
    except duckdb.Error as exc:
        raise unreadable(path, str(exc).strip().splitlines()[0]) from None


def _query(con: Any, path: Path, symbol: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`_read`'s queries on connection `con` (closed after)."""
    try:
        source = "read_parquet(?)"
        described = con.execute(f"DESCRIBE SELECT * FROM {source}", [str(path)]).fetchall()
        types = {name: kind for name, kind, *_ in described}
        if "date" not in types or "symbol" not in types:
            raise not_long_format(path)
        if types["date"].startswith("TIMESTAMP WITH TIME ZONE"):
            raise zoned_dates(path)
        if any(c not in types for c in OHLCV):
            raise missing_columns(list(types))
        text = types["date"] not in _DATE_TYPES
        date = 'TRY_CAST("date" AS TIMESTAMP) AS "date"' if text else '"date"'
        columns = ", ".join([date, *(f'"{c}"' for c in OHLCV)])
        query = f"SELECT {columns} FROM {source} WHERE symbol = ?"
        fetched = con.execute(query, [str(path), symbol]).fetchnumpy()
    finally:
        con.close()
    if len(fetched["date"]) == 0:
        raise symbol_absent(symbol, path)
    stored = filled(fetched["date"], np.datetime64("NaT"))
    if text and np.isnat(stored.astype("datetime64[ns]")).any():
        raise DataError(f"bars file {path} has text dates that are not ISO dates (YYYY-MM-DD)")
    return stored.astype("datetime64[ns]"), {c: float_column(fetched[c]) for c in OHLCV}


def _window(
    stored: np.ndarray, values: dict[str, np.ndarray], start: dt.date, end: dt.date
) -> Bars:
    """The window's bars, validated by the rules of `mcq.bar_rules`."""
    inside = (stored >= np.datetime64(start, "ns")) & (stored <= np.datetime64(end, "ns"))
    days = stored[inside].astype("datetime64[D]").astype("datetime64[ns]")
    order = np.argsort(days, kind="stable")
    days = days[order]
    if len(days) > 1 and bool(np.any(days[1:] == days[:-1])):
        raise duplicate_dates()
    bars = Bars(days, *(values[c][inside][order] for c in OHLCV))
    if any(np.isnan(getattr(bars, c)).any() for c in ("open", "high", "low", "close")):
        raise nan_prices()
    if len(days) < MIN_BARS:
        raise too_few(len(days))
    return bars


def load_series(ref: DataRef, *, verify: bool = True) -> Bars:
    """Load the bars a `DataRef` names; with `verify`, insist the digest matches the record."""
    path = Path(ref.path)
    if ref.kind == "dataset":
        read = read_dataset_symbol(path, ref.symbol, ref.adjusted)
    else:
        read = _read(path, ref.symbol)
    bars = _window(*read, ref.start, ref.end)
    if verify and ref.bars_sha256 and bars.digest() != ref.bars_sha256:
        raise digest_mismatch(ref.symbol, path)
    return bars
