"""The checker's reader of a tradebench dataset folder: manifest, checksum, bars, adjustment.

Written apart from `tradebench.data` (which the builder reads through): the manifest is read
as plain JSON, the bars file's SHA-256 is checked against it, the symbol's rows come out of
DuckDB into NumPy and adjusted prices are computed here as raw price x `adj_factor` for
open, high, low and close (volume is left in raw shares), as the dataset format defines
them. A loader bug on either side (say, adjusting only the close) then gives different bars,
a different digest, and the check fails instead of agreeing with the builder's mistake.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from tradebench.benchmarks.mcq.bar_rules import OHLCV, symbol_absent
from tradebench.errors import DataError, DatasetCorruptError

MANIFEST = "manifest.json"
PRICES = ("open", "high", "low", "close")


def _bars_file(folder: Path) -> Path:
    """The bars Parquet file the manifest names, its bytes proved by the stored SHA-256."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise DatasetCorruptError(f"{manifest} not found: {folder} is not a tradebench dataset")
    try:
        entry = json.loads(manifest.read_text())["files"]["bars"]
        path, want = folder / str(entry["path"]), str(entry["sha256"])
    except (ValueError, KeyError, TypeError):
        raise DatasetCorruptError(f"{manifest} does not name a bars file with its sha256") from None
    if not path.is_file():
        raise DatasetCorruptError(f"{path} (listed in {manifest}) is missing")
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != want:
        raise DatasetCorruptError(f"{path} fails its checksum in {manifest}")
    return path


def read_dataset_symbol(
    folder: Path, symbol: str, adjusted: bool
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One symbol's stored dates (datetime64[ns]) and OHLCV, adjusted when asked.

    Raises:
        DatasetCorruptError: No manifest, no bars entry, a missing or altered bars file.
        DataError: The symbol has no rows.
    """
    import duckdb

    path = _bars_file(folder)
    con = duckdb.connect(config={"threads": 1})
    try:
        columns = ", ".join(f'"{c}"' for c in ("date", *OHLCV, "adj_factor"))
        query = f'SELECT {columns} FROM read_parquet(?) WHERE "symbol" = ?'
        fetched: dict[str, Any] = con.execute(query, [str(path), symbol]).fetchnumpy()
    except duckdb.Error as exc:
        raise DataError(f"{path}: {str(exc).strip().splitlines()[0]}") from None
    finally:
        con.close()
    if len(fetched["date"]) == 0:
        raise symbol_absent(symbol, path)
    values = {c: float_column(fetched[c]) for c in OHLCV}
    if adjusted:
        factor = float_column(fetched["adj_factor"])
        values.update({c: values[c] * factor for c in PRICES})
    dates = filled(fetched["date"], np.datetime64("NaT"))
    return dates.astype("datetime64[ns]"), values


def float_column(values: Any) -> np.ndarray:
    """A fetched column as float64, NULL as NaN (DuckDB hands masked arrays for NULLs)."""
    if type(values) is np.ndarray:  # no NULL: numpy.ma is not needed (nor imported)
        return values.astype("float64")
    return filled(np.ma.asarray(values).astype("float64"), np.nan)


def filled(values: Any, fill: Any) -> np.ndarray:
    """A fetched column with its NULLs (the masked entries of a masked array) set to `fill`.

    DuckDB hands a plain array when a column holds no NULL, and that comes back as it
    is, so numpy.ma is loaded only for a column with NULLs."""
    if type(values) is np.ndarray:
        return values
    return np.ma.filled(np.ma.asarray(values), fill)
