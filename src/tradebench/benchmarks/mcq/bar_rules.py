"""What every MCQ bar table must satisfy, and the one line each refusal prints.

The builder's loader (`mcq.bars`, pandas) and the independent checker's (`mcq.check.series`,
DuckDB and NumPy) apply these rules each in its own code; the errors are made here so a
file is refused in the same words by both. No third-party imports: the checker's process
stays free of the builder's libraries.
"""

from __future__ import annotations

from pathlib import Path

from tradebench.errors import DataError

OHLCV = ("open", "high", "low", "close", "volume")
MIN_BARS = 60
"""Fewest bars a window may hold (the longest indicator needs a warm-up)."""


def file_not_found(path: Path) -> DataError:
    """The error for a bars file that does not exist."""
    return DataError(f"bars file {path} not found; pass an existing Parquet file")


def unreadable(path: Path, reason: str) -> DataError:
    """The error for a file the Parquet reader cannot read (corrupt, truncated, not
    Parquet); `reason` is the reader's own first line."""
    return DataError(
        f"bars file {path} is not a readable Parquet file ({reason}); check the file or "
        "write it again"
    )


def not_long_format(path: Path) -> DataError:
    """The error for a Parquet file without `date` and `symbol` columns."""
    return DataError(f"bars file {path} needs date and symbol columns (long format)")


def zoned_dates(path: Path) -> DataError:
    """The error for dates stored with a time zone (a bar's date is a trading day)."""
    return DataError(
        f"bars file {path} stores dates with a time zone; a bar's date is its trading day: "
        "store the dates without one"
    )


def symbol_absent(symbol: str, path: Path) -> DataError:
    """The error for a symbol with no row in the file."""
    return DataError(f"symbol {symbol!r} not found in {path}; check its spelling")


def missing_columns(names: list[str]) -> DataError:
    """The error for a bar table without every OHLCV column."""
    missing = [c for c in OHLCV if c not in names]
    return DataError(f"bars lack columns {missing}; expected {list(OHLCV)}")


def duplicate_dates() -> DataError:
    """The error for a bar table with a date twice."""
    return DataError("bars have duplicate dates; de-duplicate the source first")


def nan_prices() -> DataError:
    """The error for a bar table with a missing price."""
    return DataError("bars have NaN prices; drop suspended days before building questions")


def too_few(n: int) -> DataError:
    """The error for a window of fewer than `MIN_BARS` bars."""
    return DataError(f"only {n} bars in the window; use a window of {MIN_BARS}+ trading days")


def digest_mismatch(symbol: str, path: Path) -> DataError:
    """The error for bars whose digest differs from the one a record stores."""
    return DataError(
        f"bars for {symbol} in {path} changed since the questions were built "
        "(digest mismatch); rebuild the questions or restore the original data"
    )
