"""On-disk dataset format: table schemas and the manifest.

A dataset is a folder of Parquet files plus `manifest.json`. `records` (optional) holds
timestamped text evidence (news, filings, macro releases) with the instant each item became
available (`ts_available`, UTC); see `tradebench.data.records`. Prices in `bars` are the raw
traded prices; `adj_factor` turns them into adjusted prices (adjusted = raw x factor).
Where a source stores only adjusted prices (`price_basis="adjusted"`), the factor is 1 and
the "raw" prices are the adjusted ones: execution then happens on adjusted levels, which
the manifest declares.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, Field

SCHEMA_VERSION = 1

BARS = pa.schema(
    [
        ("date", pa.date32()),
        ("symbol", pa.string()),
        ("open", pa.float64()),
        ("high", pa.float64()),
        ("low", pa.float64()),
        ("close", pa.float64()),
        ("adj_factor", pa.float64()),
        ("volume", pa.float64()),
        ("amount", pa.float64()),
        ("suspended", pa.bool_()),
    ]
)
INDEX = pa.schema(
    [
        ("date", pa.date32()),
        ("symbol", pa.string()),
        ("open", pa.float64()),
        ("high", pa.float64()),
        ("low", pa.float64()),
        ("close", pa.float64()),
        ("volume", pa.float64()),
    ]
)
MEMBERSHIP = pa.schema(
    [
        ("symbol", pa.string()),
        ("start", pa.date32()),
        ("end", pa.date32()),
    ]
)
INSTRUMENTS = pa.schema(
    [
        ("symbol", pa.string()),
        ("board", pa.string()),
        ("list_date", pa.date32()),
        ("delist_date", pa.date32()),
        ("sector", pa.string()),
        ("name", pa.string()),
    ]
)
RECORDS = pa.schema(
    [
        ("record_id", pa.string()),
        ("kind", pa.string()),
        ("symbols", pa.list_(pa.string())),
        ("ts_event", pa.timestamp("ns", tz="UTC")),
        ("ts_available", pa.timestamp("ns", tz="UTC")),
        ("source", pa.string()),
        ("title", pa.string()),
        ("body", pa.string()),
        ("url", pa.string()),
        ("sha256", pa.string()),
    ]
)
TABLES: dict[str, pa.Schema] = {
    "bars": BARS,
    "index": INDEX,
    "membership": MEMBERSHIP,
    "instruments": INSTRUMENTS,
    "records": RECORDS,
}
REQUIRED_TABLES = ("bars", "instruments")
FindingKind = Literal[
    "suspension_filled",
    "factor_glitch",
    "missing_volume",
    "membership_no_bars",
    "note",
    "record_missing_available",
    "record_missing_event",
    "record_available_before_event",
    "record_duplicate",
    "record_unknown_symbol",
    "record_stamp_conflict",
    "record_empty_body",
    "record_after_calendar",
    "record_note",
]


class FileEntry(BaseModel):
    """One Parquet file of the dataset."""

    path: str = Field(description="file name relative to the dataset folder")
    rows: int = Field(description="row count at write time")
    sha256: str = Field(description="hex sha256 of the file's bytes")


class Finding(BaseModel):
    """A data problem found at import: reported, never silently dropped."""

    kind: FindingKind = Field(
        description="category of the finding; `record_*` kinds concern the records table"
    )
    count: int = Field(description="how many rows it affects")
    examples: list[str] = Field(
        default_factory=list,
        description="up to 10 samples: `SYMBOL@DATE` (bars), `SYMBOL@STAMP record_id` (records)",
    )
    detail: str = Field(default="", description="what was done about it")


class Manifest(BaseModel):
    """`manifest.json`: what a dataset holds and how to verify it."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="format version")
    name: str = Field(description="human-readable dataset name")
    market: Literal["cn", "us"] = Field(description="market whose rules apply")
    currency: str = Field(description="ISO currency of prices and cash (CNY, USD)")
    calendar_start: date = Field(description="first trading day with bars")
    calendar_end: date = Field(description="last trading day with bars")
    n_symbols: int = Field(description="distinct symbols with bars")
    n_bars: int = Field(description="rows of the bars table")
    price_basis: Literal["raw_with_factor", "adjusted"] = Field(
        description="raw_with_factor: bars hold traded prices and a real adjustment factor; "
        "adjusted: the source had adjusted prices only (factor = 1)"
    )
    index_symbol: str | None = Field(default=None, description="benchmark index symbol")
    synthetic: bool = Field(default=False, description="True for generated markets")
    seed: int | None = Field(default=None, description="generator seed of a synthetic market")
    sources: list[str] = Field(default_factory=list, description="where the data came from")
    files: dict[str, FileEntry] = Field(description="table name -> file entry")
    findings: list[Finding] = Field(default_factory=list, description="import-time findings")
