"""Import-time data checks: problems are detected and reported, never silently dropped."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tradebench.data.schema import Finding, FindingKind

GLITCH_TOLERANCE_PP = 1.0


def _examples(rows: pd.DataFrame, n: int = 10) -> list[str]:
    head = rows.head(n)
    return [
        f"{s}@{pd.Timestamp(d).date()}" for s, d in zip(head["symbol"], head["date"], strict=True)
    ]


def mark_suspensions(bars: pd.DataFrame) -> tuple[pd.DataFrame, list[Finding]]:
    """Flag zero/NaN-volume bars as suspended (volume set to 0) and report them.

    Sources forward-fill a suspended stock's last price with no volume; trading such a
    bar would be a fiction, so the broker treats `suspended=True` as unfillable.
    """
    volume = bars["volume"].to_numpy(dtype=np.float64, na_value=np.nan)
    no_volume = ~np.isfinite(volume) | (volume <= 0)
    out = bars.assign(suspended=no_volume, volume=np.where(no_volume, 0.0, volume))
    findings = []
    if no_volume.any():
        nan_count = int((~np.isfinite(volume)).sum())
        findings.append(
            Finding(
                kind="suspension_filled",
                count=int(no_volume.sum()),
                examples=_examples(bars[no_volume]),
                detail=f"zero or missing volume ({nan_count} missing): marked suspended=True, "
                "volume 0; the broker will not fill on these days",
            )
        )
    return out, findings


def factor_glitches(bars: pd.DataFrame, reported_change: pd.Series | None) -> list[Finding]:
    """List days where the adjusted return contradicts the source or the factor goes down.

    A back-adjustment factor only rises (at ex-dates). Two signals of a glitch: the factor
    falls from one day to the next, or the adjusted close-to-close return disagrees with
    the source's own reported change by more than `GLITCH_TOLERANCE_PP` percentage points
    (e.g. SZ000001 on 2020-12-31). The rows are kept and listed.
    """
    frame = bars[["symbol", "date", "close", "adj_factor"]].copy()
    if reported_change is not None:
        frame["change"] = reported_change.to_numpy(dtype=np.float64, na_value=np.nan)
    frame = frame.sort_values(["symbol", "date"], kind="stable")
    same = frame["symbol"].to_numpy()[1:] == frame["symbol"].to_numpy()[:-1]
    factor = frame["adj_factor"].to_numpy(dtype=np.float64)
    adj = frame["close"].to_numpy(dtype=np.float64) * factor
    falls = np.zeros(len(frame), dtype=bool)
    falls[1:] = same & (factor[1:] < factor[:-1] * (1 - 1e-6))
    mismatch = np.zeros(len(frame), dtype=bool)
    if "change" in frame:
        adj_ret_pct = np.zeros(len(frame))
        adj_ret_pct[1:] = (adj[1:] / adj[:-1] - 1.0) * 100.0
        change = frame["change"].to_numpy()
        mismatch[1:] = (
            same
            & np.isfinite(change[1:])
            & (np.abs(adj_ret_pct[1:] - change[1:]) > GLITCH_TOLERANCE_PP)
        )
    bad = falls | mismatch
    if not bad.any():
        return []
    return [
        Finding(
            kind="factor_glitch",
            count=int(bad.sum()),
            examples=_examples(frame[bad]),
            detail=f"{int(falls.sum())} factor decreases, {int(mismatch.sum())} adjusted returns "
            f"off the source's change by > {GLITCH_TOLERANCE_PP} pp; rows kept, adjusted "
            "returns on these days are suspect",
        )
    ]


def membership_without_bars(
    membership: pd.DataFrame, symbols: set[str], start: pd.Timestamp, end: pd.Timestamp
) -> list[Finding]:
    """Report members within the bars' calendar that have no bars (e.g. delisted names)."""
    overlaps = (membership["start"] <= end) & (
        membership["end"].isna() | (membership["end"] > start)
    )
    missing = sorted(set(membership.loc[overlaps, "symbol"]) - symbols)
    if not missing:
        return []
    return [
        Finding(
            kind="membership_no_bars",
            count=len(missing),
            examples=missing[:10],
            detail="members with no bars are never in a view's universe (nothing to trade)",
        )
    ]


def _record_examples(rows: pd.DataFrame, n: int = 10) -> list[str]:
    out = []
    for rid, symbols, avail, event in (
        rows[["record_id", "symbols", "ts_available", "ts_event"]]
        .head(n)
        .itertuples(index=False, name=None)
    ):
        stamp = avail if not pd.isna(avail) else event
        when = "-" if pd.isna(stamp) else pd.Timestamp(stamp).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(f"{symbols[0] if symbols else '-'}@{when} {rid}")
    return out


def _record_finding(kind: FindingKind, rows: pd.DataFrame, detail: str) -> list[Finding]:
    if rows.empty:
        return []
    return [Finding(kind=kind, count=len(rows), examples=_record_examples(rows), detail=detail)]


def record_findings(
    records: pd.DataFrame, known_symbols: set[str], last_decision: pd.Timestamp | None
) -> list[Finding]:
    """Problems in a canonical records frame; every row is kept and only listed.

    Args:
        records: the records table (canonical order, UTC stamps).
        known_symbols: symbols of the dataset (instruments and index).
        last_decision: decision instant of the dataset's last trading day, or None.
    """
    avail, event = records["ts_available"], records["ts_event"]
    findings = _record_finding(
        "record_missing_available",
        records[avail.isna()],
        "no ts_available: kept, but never visible to any view",
    )
    findings += _record_finding(
        "record_missing_event",
        records[event.isna()],
        "no ts_event: kept; the gate uses only ts_available",
    )
    findings += _record_finding(
        "record_available_before_event",
        records[avail.notna() & event.notna() & (avail < event)],
        "ts_available is earlier than ts_event: kept and visible from ts_available; check "
        "the source's stamps",
    )
    key = pd.Series(
        [
            f"{k}|{','.join(s)}|{h}"
            for k, s, h in zip(records["kind"], records["symbols"], records["sha256"], strict=True)
        ]
    )
    findings += _record_finding(
        "record_duplicate",
        records[key.duplicated(keep="first").to_numpy()],
        "same kind, symbols, title and body as an earlier record: kept (each copy has its "
        "own id and stamps)",
    )
    findings += _unknown_symbols(records, known_symbols)
    findings += _record_finding(
        "record_empty_body", records[records["body"] == ""], "no body text: kept, title only"
    )
    if last_decision is not None:
        findings += _record_finding(
            "record_after_calendar",
            records[avail.notna() & (avail > last_decision)],
            f"available after {last_decision.isoformat()}, the decision instant of the "
            "dataset's last trading day: kept, visible to no view inside the calendar",
        )
    return findings


def _unknown_symbols(records: pd.DataFrame, known: set[str]) -> list[Finding]:
    exploded = records["symbols"].explode().dropna()
    unknown = exploded[~exploded.isin(known)]
    if unknown.empty:
        return []
    counts = unknown.value_counts().sort_index()
    return [
        Finding(
            kind="record_unknown_symbol",
            count=int(unknown.index.nunique()),
            examples=[f"{s} ({n} records)" for s, n in counts.head(10).items()],
            detail=f"{len(counts)} symbols not in the dataset: records kept and visible "
            "(filter by symbol still finds them); nothing to trade for these names",
        )
    ]
