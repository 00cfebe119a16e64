"""Read tabular source files (CSV or Parquet) with clear errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from tradebench.errors import DataError


def read_table(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet file; unreadable files become a `DataError` naming the file."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path} does not exist; check the path")
    try:
        if path.suffix.lower() in {".parquet", ".pq"}:
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path)
    except (pa.ArrowException, OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{path} is not readable as CSV/Parquet ({exc})") from None
    if columns:
        require_columns(frame, columns, path)
    return frame


def require_columns(frame: pd.DataFrame, columns: list[str], path: Path | str) -> None:
    """Raise a `DataError` listing the required columns a source file lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path} lacks required columns {missing} (has {list(frame.columns)}); "
            "rename them in the source"
        )


def to_day(values: pd.Series) -> pd.Series:
    """Parse dates to midnight timestamps (`datetime64[ns]`), time of day dropped."""
    return pd.to_datetime(values).dt.normalize().astype("datetime64[ns]")


def read_membership(path: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """Read `symbol, name, opt-in, opt-out` intervals; returns (start, end-exclusive) + names.

    A member is in the index on day T when `start <= T < end`; an empty opt-out means
    still a member.
    """
    frame = read_table(path, ["symbol", "opt-in", "opt-out"])
    membership = pd.DataFrame(
        {
            "symbol": frame["symbol"].astype(str),
            "start": to_day(frame["opt-in"]),
            "end": to_day(frame["opt-out"]),
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
