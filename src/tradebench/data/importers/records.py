"""Import evidence records (news, filings, a generic long table) into an existing dataset.

The files are read by their source's importer (`alpaca_news`, `edgar_filings`,
`long_records`), combined into one records table (`tradebench.data.records`), checked
(`tradebench.data.checks.record_findings`) and written as `records.parquet`, listed in
`manifest.json` with its sha256 and row count. An import replaces the dataset's previous
records table, its `record_*` findings and its `records:` sources; bars and the other
tables are untouched. Every row is kept: problems are findings, never silent drops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tradebench.data.checks import record_findings
from tradebench.data.clock import decision_time
from tradebench.data.dataset import load_dataset, write_manifest, write_table
from tradebench.data.importers.alpaca_news import DEFAULT_DELAY, read_alpaca_news
from tradebench.data.importers.edgar_filings import read_edgar_filings
from tradebench.data.importers.long_records import read_long_records
from tradebench.data.importers.text import SourceRecords
from tradebench.data.records import canonical_records
from tradebench.data.schema import Finding, Manifest
from tradebench.errors import ConfigError

RECORD_SOURCE_PREFIX = "records:"


@dataclass(frozen=True)
class RecordsImport:
    """Options of a records import.

    Attributes:
        dataset: an existing dataset folder (made by `tradebench data import` or `synth`).
        news: Alpaca news files (`ts_available` = publish time + `delay`).
        filings: EDGAR filings files (`ts_available` = acceptance time).
        long: generic long files with an explicit `ts_available` column.
        delay: news delivery delay, >= 0 (default 30 minutes).
        naive_tz: zone of stamps written without one in `long` files (default UTC).
    """

    dataset: Path
    news: tuple[Path, ...] = ()
    filings: tuple[Path, ...] = ()
    long: tuple[Path, ...] = ()
    delay: pd.Timedelta = DEFAULT_DELAY
    naive_tz: str = "UTC"


@dataclass(frozen=True)
class RecordsImportResult:
    """What a records import wrote.

    Attributes:
        manifest: the dataset's updated manifest.
        n_records: rows of `records.parquet`.
        by_kind: rows per kind.
        findings: the `record_*` findings now in the manifest.
    """

    manifest: Manifest
    n_records: int
    by_kind: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def source_count(opts: RecordsImport) -> int:
    """How many source files an import reads (for a progress bar)."""
    return len(opts.news) + len(opts.filings) + len(opts.long)


def import_records(
    opts: RecordsImport, tick: Callable[[str], None] | None = None
) -> RecordsImportResult:
    """Read every source file, check the records and attach them to the dataset.

    Args:
        opts: the files and options.
        tick: called with each file's name once it has been read.

    Raises:
        ConfigError: no source file given, or a negative delay.
        DatasetCorruptError: the dataset folder does not load.
        DataError: a source file is unreadable or lacks required columns.
    """
    if source_count(opts) == 0:
        raise ConfigError("no records to import: give --news, --filings or --long files")
    if pd.Timedelta(opts.delay) < pd.Timedelta(0):
        raise ConfigError(f"news delay {opts.delay} is negative; use a delay >= 0 minutes")
    dataset = load_dataset(opts.dataset)
    parts: list[SourceRecords] = []
    jobs: list[tuple[Callable[[Path], SourceRecords], Path, str]] = [
        *((lambda p: read_alpaca_news(p, opts.delay), p, "news") for p in opts.news),
        *((read_edgar_filings, p, "filings") for p in opts.filings),
        *((lambda p: read_long_records(p, opts.naive_tz), p, "long") for p in opts.long),
    ]
    labels = []
    for reader, path, what in jobs:
        part = reader(Path(path))
        parts.append(part)
        extra = f", delay {_minutes(opts.delay)} min" if what == "news" else ""
        labels.append(f"{RECORD_SOURCE_PREFIX}{part.label} ({what}{extra})")
        if tick is not None:
            tick(part.label)
    frame = canonical_records(
        pd.concat([p.frame for p in parts], ignore_index=True), where=", ".join(labels)
    )
    manifest = dataset.manifest
    known = set(dataset.instruments["symbol"].astype(str)) | (
        {manifest.index_symbol} if manifest.index_symbol else set()
    )
    last = decision_time(manifest.calendar_end, manifest.market)
    findings = [f for p in parts for f in p.findings] + record_findings(frame, known, last)
    updated = attach_records(Path(opts.dataset), manifest, frame, findings, labels)
    counts = frame["kind"].value_counts().sort_index()
    return RecordsImportResult(
        manifest=updated,
        n_records=len(frame),
        by_kind={str(k): int(v) for k, v in counts.items()},
        findings=findings,
    )


def attach_records(
    path: Path,
    manifest: Manifest,
    records: pd.DataFrame,
    findings: list[Finding],
    sources: list[str],
) -> Manifest:
    """Write `records.parquet` into a dataset and update its manifest (replacing earlier
    records, `record_*` findings and `records:` sources). Returns the new manifest."""
    entry = write_table(path, "records", records)
    updated = manifest.model_copy(
        update={
            "files": {**manifest.files, "records": entry},
            "findings": [f for f in manifest.findings if not f.kind.startswith("record_")]
            + findings,
            "sources": [s for s in manifest.sources if not s.startswith(RECORD_SOURCE_PREFIX)]
            + sources,
        }
    )
    write_manifest(path, updated)
    return updated


def _minutes(delay: pd.Timedelta) -> str:
    minutes = pd.Timedelta(delay).total_seconds() / 60
    return f"{minutes:g}"
