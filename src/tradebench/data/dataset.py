"""Read and write datasets: a folder of Parquet tables plus a verified `manifest.json`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from tradebench.data.panel import Panel, build_panel
from tradebench.data.records import records_to_arrow, records_to_pandas, validate_records
from tradebench.data.schema import REQUIRED_TABLES, TABLES, FileEntry, Manifest
from tradebench.errors import DataError, DatasetCorruptError
from tradebench.files import write_bytes_atomic

MANIFEST = "manifest.json"
PRICE_COLUMNS = ("open", "high", "low", "close")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, streamed so large files stay cheap on memory."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Dataset:
    """A loaded dataset. Agents never touch it directly: they read through `MarketView`."""

    path: Path
    manifest: Manifest
    bars: pd.DataFrame
    instruments: pd.DataFrame
    index: pd.DataFrame | None = None
    membership: pd.DataFrame | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    records: pd.DataFrame | None = None
    """Text evidence (`tradebench.data.records`); None when the dataset has none. Only
    `MarketView.records` hands it to agents, gated by `ts_available`."""

    @property
    def market(self) -> str:
        """Market whose rules apply (`cn` or `us`)."""
        return self.manifest.market

    @cached_property
    def panel(self) -> Panel:
        """Dates x symbols arrays built once per dataset, shared by every view."""
        return build_panel(self)

    def symbol_bars(
        self, symbol: str, start: Any = None, end: Any = None, adjusted: bool = True
    ) -> pd.DataFrame:
        """OHLCV of one symbol indexed by `date`, adjusted (raw x factor) by default.

        For offline tools that legitimately need a whole window (e.g. backtest questions);
        agents read through `MarketView` instead.
        """
        rows = self.bars[self.bars["symbol"] == symbol]
        if rows.empty:
            raise DataError(f"symbol {symbol!r} has no bars in dataset {self.path}")
        if start is not None:
            rows = rows[rows["date"] >= pd.Timestamp(start)]
        if end is not None:
            rows = rows[rows["date"] <= pd.Timestamp(end)]
        out = rows.set_index("date")[["open", "high", "low", "close", "volume"]].copy()
        if adjusted:
            factor = rows["adj_factor"].to_numpy()
            for col in PRICE_COLUMNS:
                out[col] = out[col].to_numpy() * factor
        out.index.name = "date"
        return out


def write_dataset(
    out: Path,
    tables: dict[str, pd.DataFrame],
    manifest_fields: dict[str, Any],
    progress: Callable[[str, int, int], None] | None = None,
) -> Manifest:
    """Write tables as Parquet (schema-cast), checksum them and write `manifest.json`;
    `progress(f"writing {name}.parquet", tables written, tables)` before each table."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, FileEntry] = {}
    present = [(name, frame) for name, frame in tables.items() if frame is not None]
    for i, (name, frame) in enumerate(present):
        if progress is not None:
            progress(f"writing {name}.parquet", i, len(present))
        files[name] = write_table(out, name, frame)
    manifest = Manifest(files=files, **manifest_fields)
    write_manifest(out, manifest)
    return manifest


def write_table(out: Path, name: str, frame: pd.DataFrame) -> FileEntry:
    """Write one table as `<name>.parquet` (schema-cast, via a temporary file + rename)."""
    table = _to_arrow(name, frame)
    file = Path(out) / f"{name}.parquet"
    tmp = file.with_name(f".{file.name}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(file)
    return FileEntry(path=file.name, rows=table.num_rows, sha256=sha256_file(file))


def write_manifest(out: Path, manifest: Manifest) -> None:
    """Write `manifest.json` into the dataset folder `out` (whole or not at all: a
    temporary file renamed into place)."""
    path = Path(out) / MANIFEST
    write_bytes_atomic(path, (manifest.model_dump_json(indent=2) + "\n").encode())


def _to_arrow(name: str, frame: pd.DataFrame) -> pa.Table:
    schema = TABLES[name]
    missing = [c for c in schema.names if c not in frame.columns]
    if missing:
        raise DataError(f"table {name!r} is missing columns {missing}")
    if name == "records":
        return records_to_arrow(frame)
    frame = frame[schema.names]
    return pa.Table.from_pandas(frame, schema=schema, preserve_index=False)


def load_dataset(path: str | Path, verify: bool = True) -> Dataset:
    """Load a dataset folder, verifying manifest, checksums, schemas and basic integrity.

    With `verify`, each file's sha256 is checked and each record's text against its
    `sha256` column (`records.parquet`, when the dataset has one).

    Raises:
        DatasetCorruptError: a file is missing, truncated, fails its checksum or schema.
        DataError: rows are invalid (duplicates, NaN or non-positive prices).
    """
    path = Path(path)
    manifest = _read_manifest(path)
    frames: dict[str, pd.DataFrame] = {}
    for name, entry in manifest.files.items():
        if name not in TABLES:
            continue
        frames[name] = _read_table(path, name, entry, verify)
    for name in REQUIRED_TABLES:
        if name not in frames:
            raise DatasetCorruptError(
                f"{path / MANIFEST} lists no {name!r} table; re-create the dataset with "
                "`tradebench data import` or `tradebench data synth`"
            )
    validate_bars(frames["bars"], where=str(path / manifest.files["bars"].path))
    if verify and "records" in frames:
        validate_records(frames["records"], where=str(path / manifest.files["records"].path))
    return Dataset(
        path=path,
        manifest=manifest,
        bars=frames["bars"],
        instruments=frames["instruments"],
        index=frames.get("index"),
        membership=frames.get("membership"),
        records=frames.get("records"),
    )


def _read_manifest(path: Path) -> Manifest:
    file = path / MANIFEST
    if not file.exists():
        raise DatasetCorruptError(
            f"{file} not found: {path} is not a tradebench dataset. Create one with "
            "`tradebench data import` or `tradebench data synth`"
        )
    try:
        return Manifest.model_validate(json.loads(file.read_text()))
    except (json.JSONDecodeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise DatasetCorruptError(
            f"{file} is not a valid manifest ({first}); re-create the dataset"
        ) from None


def _read_table(path: Path, name: str, entry: FileEntry, verify: bool) -> pd.DataFrame:
    file = path / entry.path
    fix = "re-create the dataset with `tradebench data import` (or restore the file)"
    if not file.exists():
        raise DatasetCorruptError(f"{file} is missing; {fix}")
    if verify and sha256_file(file) != entry.sha256:
        raise DatasetCorruptError(
            f"{file} fails its checksum (the file changed after import or is truncated); {fix}"
        )
    try:
        table = pq.read_table(file)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetCorruptError(f"{file} is not readable Parquet ({exc}); {fix}") from None
    expected = TABLES[name]
    missing = [c for c in expected.names if c not in table.column_names]
    if missing:
        raise DatasetCorruptError(f"{file} lacks columns {missing}; {fix}")
    try:
        table = table.select(expected.names).cast(expected)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DatasetCorruptError(f"{file} has wrong column types ({exc}); {fix}") from None
    if table.num_rows != entry.rows:
        raise DatasetCorruptError(
            f"{file} has {table.num_rows} rows, the manifest says {entry.rows}; {fix}"
        )
    return records_to_pandas(table) if name == "records" else _arrow_to_pandas(table)


def _arrow_to_pandas(table: pa.Table) -> pd.DataFrame:
    frame = table.to_pandas(date_as_object=False)
    for col in frame.columns:
        if col in {"date", "start", "end", "list_date", "delist_date"}:
            frame[col] = pd.to_datetime(frame[col]).astype("datetime64[ns]")
    return frame


def validate_bars(bars: pd.DataFrame, where: str) -> None:
    """Reject duplicate (symbol, date) rows and NaN or non-positive prices, naming examples."""
    dup = bars.duplicated(["symbol", "date"], keep=False)
    if dup.any():
        raise DataError(
            f"{where}: {int(dup.sum())} duplicate (symbol, date) rows, e.g. "
            f"{_examples(bars[dup])}; remove duplicates in the source and re-import"
        )
    prices = bars[list(PRICE_COLUMNS)].to_numpy(dtype=np.float64)
    bad = ~np.isfinite(prices).all(axis=1) | (prices <= 0).any(axis=1)
    if bad.any():
        raise DataError(
            f"{where}: {int(bad.sum())} rows with NaN or non-positive prices, e.g. "
            f"{_examples(bars[bad])}; fix or drop them in the source and re-import"
        )


def _examples(rows: pd.DataFrame, n: int = 5) -> str:
    head = rows.head(n)
    return ", ".join(
        f"{s}@{pd.Timestamp(d).date()}" for s, d in zip(head["symbol"], head["date"], strict=True)
    )
