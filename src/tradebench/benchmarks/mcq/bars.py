"""Daily OHLCV bars for the MCQ benchmark: loading, validation, digest and CSV export.

The builder only ever sees a plain OHLCV DataFrame indexed by `date`; this module is the
one place that knows where such a frame comes from. The independent checker reads the
same sources into NumPy arrays on its own (`mcq.check.series`), and the stored digest
proves both saw the same bars.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from tradebench.benchmarks.mcq.bar_rules import (
    MIN_BARS,
    OHLCV,
    digest_mismatch,
    duplicate_dates,
    missing_columns,
    nan_prices,
    too_few,
)
from tradebench.benchmarks.mcq.bars_parquet import symbol_table
from tradebench.benchmarks.mcq.config import DataRef


def validate_bars(bars: pd.DataFrame) -> pd.DataFrame:
    """Return a clean copy: `date` index (sorted, unique), float64 OHLCV, no NaN prices.

    Raises `DataError` saying what is wrong, because a silent fix would change answers.
    """
    if any(c not in bars.columns for c in OHLCV):
        raise missing_columns(list(bars.columns))
    out = bars.loc[:, list(OHLCV)].astype("float64").copy()
    out.index = pd.DatetimeIndex(pd.to_datetime(bars.index)).as_unit("ns").normalize()
    out.index.name = "date"
    out = out.sort_index()
    if out.index.has_duplicates:
        raise duplicate_dates()
    if out[["open", "high", "low", "close"]].isna().any().any():
        raise nan_prices()
    if len(out) < MIN_BARS:
        raise too_few(len(out))
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


def read_long_parquet(path: Path, symbol: str, start: dt.date, end: dt.date) -> pd.DataFrame:
    """Read one symbol's window from a long-format Parquet file (date, symbol, OHLCV);
    the reading itself is `bars_parquet.symbol_table`'s."""
    frame = symbol_table(path, symbol).to_pandas()
    frame = frame.assign(date=pd.to_datetime(frame["date"])).set_index("date")
    return _window(frame, start, end)


def read_dataset(
    path: Path, symbol: str, start: dt.date, end: dt.date, adjusted: bool
) -> pd.DataFrame:
    """Read one symbol's window from a tradebench dataset folder via `tradebench.data`
    (imported here: a build from a long Parquet file does without it)."""
    from tradebench.data import load_dataset

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
        raise digest_mismatch(ref.symbol, path)
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
