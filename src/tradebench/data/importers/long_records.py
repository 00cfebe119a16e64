"""Read a generic long table of records (CSV or Parquet) with an explicit `ts_available`.

Columns: `kind` and `ts_available` (required), `title` and/or `body` (at least one),
optionally `record_id`, `symbols` (a list, or one string split on `,` / `;`), `ts_event`,
`source`, `url`. Stamps with a zone (`2025-03-10T09:30:00-04:00`, `...Z`) are converted to
UTC; stamps without one are read in `naive_tz` (default UTC) and counted in a
`record_note` finding. An empty or unreadable `ts_available` leaves the record without
one: it is kept, listed as `record_missing_available` and never visible.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tradebench.data.importers.files import read_table
from tradebench.data.importers.text import SourceRecords
from tradebench.data.schema import Finding
from tradebench.errors import DataError

REQUIRED = ["kind", "ts_available"]
_ZONE = r"(?:Z|[+-]\d{2}:?\d{2})$"


def read_long_records(path: Path, naive_tz: str = "UTC") -> SourceRecords:
    """Records from one long CSV/Parquet file (see the module docstring for columns).

    Raises:
        DataError: unreadable file, missing `kind`/`ts_available`, or neither title nor body.
    """
    raw = read_table(path, REQUIRED).reset_index(drop=True)
    if "title" not in raw and "body" not in raw:
        raise DataError(f"{path} has neither a `title` nor a `body` column; add one")
    findings: list[Finding] = []
    stamps = {}
    for col in ("ts_event", "ts_available"):
        values = raw[col] if col in raw else pd.Series([None] * len(raw), dtype=object)
        stamps[col], note = _stamps(values, naive_tz, col)
        findings += [note] if note else []
    frame = pd.DataFrame(
        {
            "kind": raw["kind"].astype(object).where(raw["kind"].notna(), "").astype(str),
            "symbols": _col(raw, "symbols"),
            **stamps,
            "source": _col(raw, "source"),
            "title": _col(raw, "title"),
            "body": _col(raw, "body"),
            "url": _col(raw, "url"),
        }
    )
    if "record_id" in raw:
        frame["record_id"] = _col(raw, "record_id")
    return SourceRecords(frame=frame, label=Path(path).name, findings=findings)


def _col(raw: pd.DataFrame, name: str) -> list[object]:
    if name not in raw:
        return [None] * len(raw)
    return [None if not isinstance(v, (list, tuple)) and _isna(v) else v for v in raw[name]]


def _isna(value: object) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # arrays (a Parquet list column) are values
        return False


def _stamps(values: pd.Series, naive_tz: str, col: str) -> tuple[pd.Series, Finding | None]:
    """UTC stamps, and a `record_note` when some had no zone or could not be read."""
    if pd.api.types.is_datetime64_any_dtype(values):
        naive = int(values.notna().sum()) if values.dt.tz is None else 0
        out = values.dt.tz_localize(naive_tz) if values.dt.tz is None else values
        out = out.dt.tz_convert("UTC").astype("datetime64[ns, UTC]").reset_index(drop=True)
        return out, _note(col, naive, 0, naive_tz)
    text = values.astype(object).where(values.notna(), "").astype(str).str.strip()
    blank = text == ""
    zoned = text.str.contains(_ZONE, regex=True) & ~blank
    aware = pd.to_datetime(text.where(zoned), utc=True, errors="coerce", format="mixed")
    local = pd.to_datetime(text.where(~zoned & ~blank), errors="coerce", format="mixed")
    local = local.dt.tz_localize(naive_tz, ambiguous="NaT", nonexistent="NaT")
    out = aware.where(zoned, local.dt.tz_convert("UTC")).astype("datetime64[ns, UTC]")
    bad = int((~blank & out.isna()).sum())
    return out.reset_index(drop=True), _note(col, int((~zoned & ~blank).sum()), bad, naive_tz)


def _note(col: str, naive: int, bad: int, naive_tz: str) -> Finding | None:
    parts = [f"{naive} stamps without a zone read as {naive_tz}"] if naive else []
    parts += [f"{bad} unreadable stamps left empty"] if bad else []
    if not parts:
        return None
    return Finding(kind="record_note", count=naive + bad, detail=f"{col}: " + "; ".join(parts))
