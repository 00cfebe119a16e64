"""Read an SEC EDGAR filings file (10-K, 10-Q, ...) into records.

Input columns: `ticker`, `type` (form), `content` (text), `document_url`, `utc_timestamp`
(EDGAR acceptance time, UTC), optionally `est_timestamp` (the same instant on New York
clocks) and `cik`.

Each filing becomes a `filing` record: `ts_available` = acceptance time; `ts_event` = the
period of report, read from the document name (`tsla-20260331.htm` -> 2026-03-31, 00:00
UTC), null when the name carries no date. Where `est_timestamp` disagrees with
`utc_timestamp` (they should differ by New York's UTC offset), the later of the two readings
is used and the row is listed as `record_stamp_conflict`: never earlier than either stamp
claims. The title is `<TICKER> <FORM> for the period ended <DATE>`; the body is the
file's text as given (stripped).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from tradebench.data.importers.files import read_table
from tradebench.data.importers.text import SourceRecords, as_utc
from tradebench.data.schema import Finding

REQUIRED = ["ticker", "type", "content", "document_url", "utc_timestamp"]
NEW_YORK = "America/New_York"
_PERIOD = re.compile(r"[-_](\d{8})(?:x[a-z0-9]*)?\.html?$", re.IGNORECASE)


def period_of(url: str) -> pd.Timestamp:
    """The period-of-report date in an EDGAR document name, 00:00 UTC; NaT if absent."""
    match = _PERIOD.search(url or "")
    if not match:
        return pd.NaT
    day = pd.to_datetime(match.group(1), format="%Y%m%d", errors="coerce")
    return pd.NaT if pd.isna(day) else day.tz_localize("UTC").as_unit("ns")


def read_edgar_filings(path: Path) -> SourceRecords:
    """Filing records from one EDGAR filings file (CSV or Parquet).

    Raises:
        DataError: the file is unreadable or lacks a required column.
    """
    raw = read_table(path, REQUIRED).reset_index(drop=True)
    accepted = as_utc(raw["utc_timestamp"], "UTC").reset_index(drop=True)
    findings: list[Finding] = []
    if "est_timestamp" in raw:
        accepted, findings = _reconcile(raw, accepted)
    url = raw["document_url"].astype(object).where(raw["document_url"].notna(), "").astype(str)
    period = pd.Series([period_of(u) for u in url], dtype="datetime64[ns, UTC]")
    ticker = raw["ticker"].astype(str).str.strip().str.upper()
    form = raw["type"].astype(object).where(raw["type"].notna(), "filing").astype(str)
    title = [
        f"{t} {f}" + ("" if pd.isna(p) else f" for the period ended {p.date()}")
        for t, f, p in zip(ticker, form, period, strict=True)
    ]
    body = raw["content"].astype(object).where(raw["content"].notna(), "").astype(str)
    frame = pd.DataFrame(
        {
            "kind": "filing",
            "symbols": ticker.to_numpy(dtype=object),
            "ts_event": period,
            "ts_available": accepted,
            "source": "sec-edgar",
            "title": title,
            "body": body.str.strip().to_numpy(dtype=object),
            "url": url.to_numpy(dtype=object),
        }
    )
    return SourceRecords(frame=frame, label=Path(path).name, findings=findings)


def _reconcile(raw: pd.DataFrame, accepted: pd.Series) -> tuple[pd.Series, list[Finding]]:
    """Take the later of `utc_timestamp` and `est_timestamp` (read in New York time)."""
    est = as_utc(raw["est_timestamp"], NEW_YORK).reset_index(drop=True)
    conflict = accepted.notna() & est.notna() & (accepted != est)
    if not conflict.any():
        return accepted, []
    later = accepted.where(~conflict | (accepted >= est), est)
    iso = "%Y-%m-%dT%H:%M:%SZ"
    examples = [
        f"{raw['ticker'].iloc[i]}@{accepted.iloc[i].strftime(iso)} (utc_timestamp) vs "
        f"{est.iloc[i].strftime(iso)} (est_timestamp)"
        for i in conflict[conflict].index[:10]
    ]
    finding = Finding(
        kind="record_stamp_conflict",
        count=int(conflict.sum()),
        examples=examples,
        detail="utc_timestamp and est_timestamp are not the same instant (New York offset); "
        "the later reading is used as ts_available",
    )
    return later, [finding]
