"""Import-time data checks: problems are detected and reported, never silently dropped."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tradebench.data.schema import Finding

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
