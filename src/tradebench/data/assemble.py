"""Turn canonical frames from any importer into a checked, written dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.data.boards import board_of
from tradebench.data.checks import factor_glitches, mark_suspensions, membership_without_bars
from tradebench.data.dataset import validate_bars, write_dataset
from tradebench.data.importers.files import ImportProgress, no_progress
from tradebench.data.schema import Finding, Manifest

CURRENCY = {"cn": "CNY", "us": "USD"}


def build_instruments(
    bars: pd.DataFrame,
    market: str,
    names: dict[str, str] | None = None,
    sectors: dict[str, str] | None = None,
) -> pd.DataFrame:
    """One row per symbol: board from the code, listing dates from the first/last bar."""
    span = bars.groupby("symbol", observed=True)["date"].agg(["min", "max"])
    last_day = bars["date"].max()
    symbols = span.index.astype(str)
    return pd.DataFrame(
        {
            "symbol": symbols,
            "board": [board_of(s, market) for s in symbols],
            "list_date": pd.to_datetime(span["min"]).to_numpy(),
            # a symbol whose bars stop before the data's last day was delisted then; a
            # datetime column with NaT (not an object mix), whatever unit the bars carry
            "delist_date": pd.to_datetime(span["max"].where(span["max"] < last_day)).to_numpy(),
            "sector": [None if sectors is None else sectors.get(s) for s in symbols],
            "name": [None if names is None else names.get(s) for s in symbols],
        }
    )


def assemble_dataset(
    out: Path,
    bars: pd.DataFrame,
    *,
    market: str,
    name: str,
    price_basis: str,
    sources: list[str],
    index: pd.DataFrame | None = None,
    membership: pd.DataFrame | None = None,
    names: dict[str, str] | None = None,
    sectors: dict[str, str] | None = None,
    reported_change: pd.Series | None = None,
    extra_findings: list[Finding] | None = None,
    manifest_extra: dict[str, Any] | None = None,
    progress: ImportProgress | None = None,
) -> Manifest:
    """Validate, flag suspensions, list glitches, build instruments and write the folder.

    `bars` holds raw prices and `adj_factor`; `reported_change` is the source's own
    adjusted % change aligned to `bars` rows, when it has one. `progress(phase, done,
    total)` hears each phase (`write_dataset`: table by table).
    """
    report = progress or no_progress
    report(f"checking {len(bars):,} bars", 0, 1)
    validate_bars(bars, where="import input")
    bars, findings = mark_suspensions(bars)
    report("checking adjustment factors", 0, 1)
    findings += factor_glitches(bars, reported_change)
    if membership is not None:
        findings += membership_without_bars(
            membership, set(bars["symbol"].astype(str)), bars["date"].min(), bars["date"].max()
        )
    findings += extra_findings or []
    if "amount" not in bars:
        bars = bars.assign(amount=np.nan)
    report("sorting bars by symbol and date", 0, 1)
    bars = bars.sort_values(["symbol", "date"], kind="stable").reset_index(drop=True)
    instruments = build_instruments(bars, market, names, sectors)
    tables = {"bars": bars, "instruments": instruments, "index": index, "membership": membership}
    index_symbol = None if index is None or index.empty else str(index["symbol"].iloc[0])
    fields = {
        "name": name,
        "market": market,
        "currency": CURRENCY[market],
        "calendar_start": bars["date"].min().date(),
        "calendar_end": bars["date"].max().date(),
        "n_symbols": int(bars["symbol"].nunique()),
        "n_bars": len(bars),
        "price_basis": price_basis,
        "index_symbol": index_symbol,
        "sources": sources,
        "findings": findings,
        **(manifest_extra or {}),
    }
    return write_dataset(out, tables, fields, progress)
