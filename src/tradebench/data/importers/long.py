"""Import one long table of daily bars (CSV or Parquet) into a dataset.

Input columns: `date, symbol, open, high, low, close, volume`, optionally `factor` (or
`adj_factor`), `amount` and `change` (the source's own % change of the adjusted close).
`prices="adjusted"` (default) means the OHLC columns are adjusted: with a factor,
raw = price / factor; without one, the dataset declares `price_basis="adjusted"`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from tradebench.data import clock
from tradebench.data.assemble import assemble_dataset
from tradebench.data.importers.files import (
    ImportProgress,
    no_progress,
    read_membership,
    read_sectors,
    read_table,
    require_columns,
    to_day,
)
from tradebench.data.schema import Finding, Manifest
from tradebench.errors import DataError

BAR_COLUMNS = ["date", "symbol", "open", "high", "low", "close", "volume"]
TICK = {"cn": 0.01, "us": None}


@dataclass(frozen=True)
class LongImport:
    """Options of a long-format import."""

    source: Path
    out: Path
    market: Literal["cn", "us"] = "cn"
    prices: Literal["adjusted", "raw"] = "adjusted"
    name: str | None = None
    index_file: Path | None = None
    index_symbol: str | None = None
    membership_file: Path | None = None
    sectors_file: Path | None = None
    symbols: tuple[str, ...] = field(default_factory=tuple)
    start: str | None = None
    end: str | None = None


def import_long(opts: LongImport, progress: ImportProgress | None = None) -> Manifest:
    """Import a long bars file (plus optional index and membership files) as a dataset;
    `progress(phase, done, total)` hears each phase (the bars file row by row)."""
    report = progress or no_progress
    raw = read_table(opts.source, progress=progress)
    require_columns(raw, BAR_COLUMNS, opts.source)
    report(f"selecting rows of {len(raw):,}", 0, 1)
    frame = _select(raw, opts)
    if frame.empty:
        raise DataError(f"{opts.source}: no rows left after the symbol/date filters")
    report(f"converting prices of {len(frame):,} rows", 0, 1)
    bars, basis, findings = _canonical_bars(frame, opts)
    change = frame["change"].reset_index(drop=True) if "change" in frame else None
    if opts.index_file is not None or opts.index_symbol:
        report("reading the index", 0, 1)
    index = _index(opts, raw, bars)
    membership, names = (None, {})
    if opts.membership_file is not None:
        report(f"reading {opts.membership_file.name}", 0, 1)
        membership, names = read_membership(opts.membership_file)
    if opts.index_symbol and opts.index_file is None:
        keep = bars["symbol"] != opts.index_symbol
        bars = bars[keep].reset_index(drop=True)
        change = None if change is None else change[keep.to_numpy()].reset_index(drop=True)
    sectors = read_sectors(opts.sectors_file) if opts.sectors_file else None
    sources = [str(p.name) for p in (opts.source, opts.index_file, opts.membership_file) if p]
    return assemble_dataset(
        opts.out,
        bars,
        market=opts.market,
        name=opts.name or opts.source.stem,
        price_basis=basis,
        sources=sources,
        index=index,
        membership=membership,
        names=names,
        sectors=sectors,
        reported_change=change,
        extra_findings=findings,
        progress=progress,
    )


def _select(raw: pd.DataFrame, opts: LongImport) -> pd.DataFrame:
    frame = raw.assign(date=to_day(raw["date"], opts.source), symbol=raw["symbol"].astype(str))
    if opts.symbols:
        wanted = set(opts.symbols) | ({opts.index_symbol} if opts.index_symbol else set())
        frame = frame[frame["symbol"].isin(wanted)]
    if opts.start:
        frame = frame[frame["date"] >= pd.Timestamp(clock.to_day(opts.start))]
    if opts.end:
        frame = frame[frame["date"] <= pd.Timestamp(clock.to_day(opts.end))]
    return frame.reset_index(drop=True)


def _canonical_bars(
    frame: pd.DataFrame, opts: LongImport
) -> tuple[pd.DataFrame, str, list[Finding]]:
    factor_col = (
        "adj_factor" if "adj_factor" in frame else ("factor" if "factor" in frame else None)
    )
    prices = {
        c: frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
        for c in ("open", "high", "low", "close")
    }
    findings: list[Finding] = []
    if factor_col is None:
        factor = np.ones(len(frame))
        basis = "adjusted" if opts.prices == "adjusted" else "raw_with_factor"
        if opts.prices == "raw":
            findings.append(
                Finding(
                    kind="note",
                    count=len(frame),
                    detail="raw prices without "
                    "a factor: returns across corporate actions are unadjusted",
                )
            )
    else:
        factor = frame[factor_col].to_numpy(dtype=np.float64, na_value=np.nan)
        if not (np.isfinite(factor) & (factor > 0)).all():
            raise DataError(f"{opts.source}: column {factor_col!r} has NaN or non-positive values")
        basis = "raw_with_factor"
        if opts.prices == "adjusted":
            prices = {c: v / factor for c, v in prices.items()}
    tick = TICK[opts.market] if basis == "raw_with_factor" else None
    if tick:
        prices = {c: np.round(v / tick) * tick for c, v in prices.items()}
        prices = {c: np.round(v, 6) for c, v in prices.items()}
    bars = pd.DataFrame(
        {
            "date": frame["date"].to_numpy(),
            "symbol": frame["symbol"].to_numpy(),
            **prices,
            "adj_factor": factor,
            "volume": frame["volume"].to_numpy(dtype=np.float64, na_value=np.nan),
            "amount": frame["amount"].to_numpy(dtype=np.float64, na_value=np.nan)
            if "amount" in frame
            else np.nan,
        }
    )
    return bars, basis, findings


def _index(opts: LongImport, raw: pd.DataFrame, bars: pd.DataFrame) -> pd.DataFrame | None:
    if opts.index_file is not None:
        src = read_table(opts.index_file, ["date", "close"])
        src = src.assign(date=to_day(src["date"], opts.index_file))
        if "symbol" in src and opts.index_symbol:
            held = src["symbol"].astype(str)
            if not (held == opts.index_symbol).any():
                names = sorted(held.unique())
                more = f" and {len(names) - 8} more" if len(names) > 8 else ""
                shown = ", ".join(names[:8]) + more
                raise DataError(
                    f"--index-symbol {opts.index_symbol!r} is not in {opts.index_file} (it "
                    f"holds {shown or 'no rows'}); name one of those or leave --index-symbol out"
                )
            src = src[held == opts.index_symbol]
        if src.empty:
            raise DataError(f"index file {opts.index_file} holds no rows")
        symbol = opts.index_symbol or (str(src["symbol"].iloc[0]) if "symbol" in src else "INDEX")
    elif opts.index_symbol:
        src = bars[bars["symbol"] == opts.index_symbol].copy()
        if src.empty:
            raise DataError(f"index symbol {opts.index_symbol!r} not found in {opts.source}")
        for col in ("open", "high", "low", "close"):
            src[col] = src[col] * src["adj_factor"]
        symbol = opts.index_symbol
    else:
        return None
    lo, hi = bars["date"].min(), bars["date"].max()
    src = src[(src["date"] >= lo) & (src["date"] <= hi)]
    if src.empty:
        where = opts.index_file or opts.source
        raise DataError(
            f"the index in {where} has no day between the bars' first and last "
            f"({lo.date()} .. {hi.date()}); give an index file covering them"
        )
    out = pd.DataFrame({"date": src["date"].to_numpy(), "symbol": symbol})
    for col in ("open", "high", "low", "close", "volume"):
        out[col] = src[col].to_numpy(dtype=np.float64) if col in src else np.nan
    return out.sort_values("date").reset_index(drop=True)
