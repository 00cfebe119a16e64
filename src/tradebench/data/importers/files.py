"""Read tabular source files (CSV or Parquet) with clear errors, reporting progress."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tradebench.errors import DataError

ImportProgress = Callable[[str, int, int], None]
"""`progress(phase, done, total)`: an import is in `phase` (e.g. `reading bars.parquet`,
`writing bars.parquet`), `done` of its `total` units (rows read, symbols, or 0/1 for a
step done at once) are finished; each phase is reported at its start."""
READ_BATCH_ROWS = 131_072
"""Rows per Parquet batch while a read reports its progress."""


def no_progress(phase: str, done: int, total: int) -> None:
    """An `ImportProgress` that shows nothing."""


def read_table(
    path: Path, columns: list[str] | None = None, progress: ImportProgress | None = None
) -> pd.DataFrame:
    """Read a CSV or Parquet file; unreadable files become a `DataError` naming the file.
    `progress` hears `reading NAME` with the rows read so far (a Parquet file, batch by
    batch) or 0 then 1 of 1 (a CSV file, read at once)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path} does not exist; check the path")
    report = progress or no_progress
    phase = f"reading {path.name}"
    try:
        if path.suffix.lower() in {".parquet", ".pq"}:
            frame = _read_parquet(path, phase, report) if progress else pd.read_parquet(path)
        else:
            report(phase, 0, 1)
            frame = pd.read_csv(path)
            report(phase, 1, 1)
    except (pa.ArrowException, OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{path} is not readable as CSV/Parquet ({exc})") from None
    if columns:
        require_columns(frame, columns, path)
    return frame


def _read_parquet(path: Path, phase: str, progress: ImportProgress) -> pd.DataFrame:
    """A Parquet file read in batches, `progress(phase, rows read, rows)` after each; the
    same frame as `pd.read_parquet` (one conversion of the whole table, pandas metadata
    kept)."""
    with pq.ParquetFile(path) as source:
        total = source.metadata.num_rows
        progress(phase, 0, total)
        batches, done = [], 0
        for batch in source.iter_batches(batch_size=READ_BATCH_ROWS):
            batches.append(batch)
            done += batch.num_rows
            progress(phase, done, total)
        table = pa.Table.from_batches(batches, schema=source.schema_arrow)
    return table.to_pandas()


def require_columns(frame: pd.DataFrame, columns: list[str], path: Path | str) -> None:
    """Raise a `DataError` listing the required columns a source file lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path} lacks required columns {missing} (has {list(frame.columns)}); "
            "rename them in the source"
        )


def to_day(values: pd.Series, where: Path | str = "the source") -> pd.Series:
    """Parse dates to midnight timestamps (`datetime64[ns]`), time of day dropped. A date
    written with a UTC offset (`2024-01-02T09:30:00+08:00`) keeps the day it names there.

    Raises:
        DataError: A value is not a date, or the offsets differ between rows.
    """
    try:
        parsed = pd.to_datetime(values)
        if isinstance(parsed.dtype, pd.DatetimeTZDtype):
            parsed = parsed.dt.tz_localize(None)  # the wall-clock day the file wrote
        return parsed.dt.normalize().astype("datetime64[ns]")
    except (ValueError, TypeError, OverflowError, AttributeError) as exc:
        reason = " ".join(str(exc).split())[:160]
        raise DataError(
            f"{where}: column {values.name!r} holds values that are not dates ({reason}); "
            "write YYYY-MM-DD (one UTC offset for the whole column, if any)"
        ) from None


def read_membership(path: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """Read `symbol, name, opt-in, opt-out` intervals; returns (start, end-exclusive) + names.

    A member is in the index on day T when `start <= T < end`; an empty opt-out means
    still a member.
    """
    frame = read_table(path, ["symbol", "opt-in", "opt-out"])
    membership = pd.DataFrame(
        {
            "symbol": frame["symbol"].astype(str),
            "start": to_day(frame["opt-in"], path),
            "end": to_day(frame["opt-out"], path),
        }
    )
    names = {}
    if "name" in frame:
        names = dict(zip(frame["symbol"].astype(str), frame["name"].astype(str), strict=True))
    return membership, names


def read_sectors(path: Path) -> dict[str, str]:
    """Read a `symbol|ticker, sector|gics_sector` file into a mapping."""
    frame = read_table(path)
    sym = "symbol" if "symbol" in frame else "ticker"
    sec = "sector" if "sector" in frame else "gics_sector"
    require_columns(frame, [sym, sec], path)
    return dict(zip(frame[sym].astype(str), frame[sec].astype(str), strict=True))
