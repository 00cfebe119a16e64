"""Import a Qlib binary data folder (the layout A-share researchers keep locally).

Layout: `calendars/day.txt` (one date a line), `instruments/<universe>.txt` (tab-separated
`SYMBOL start end`, end inclusive), `features/<symbol lower>/<field>.day.bin` (little-endian
float32: the first value is the start position in the calendar, then one value a day).
Qlib's convention: prices are adjusted and `factor` recovers raw (raw = price / factor);
volume is adjusted too (raw shares = volume x factor) unless `volume="raw"`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from tradebench.data.assemble import assemble_dataset
from tradebench.data.importers.files import ImportProgress, no_progress
from tradebench.data.schema import Manifest
from tradebench.errors import DataError

FIELDS = ("open", "high", "low", "close", "volume", "factor", "amount", "change")
REQUIRED = ("open", "high", "low", "close", "volume")


@dataclass(frozen=True)
class QlibImport:
    """Options of a Qlib-folder import."""

    source: Path
    out: Path
    market: Literal["cn", "us"] = "cn"
    universe: str = "all"
    membership_universe: str | None = None
    index_symbol: str | None = None
    volume: Literal["adjusted", "raw"] = "adjusted"
    name: str | None = None


def read_calendar(root: Path) -> np.ndarray:
    """The folder's trading calendar as `datetime64[D]`."""
    file = root / "calendars" / "day.txt"
    if not file.exists():
        raise DataError(f"{file} not found: {root} is not a Qlib data folder")
    lines = [ln.strip() for ln in file.read_text().splitlines() if ln.strip()]
    return np.array(pd.to_datetime(lines).values.astype("datetime64[D]"))


def read_instruments(root: Path, universe: str) -> pd.DataFrame:
    """`instruments/<universe>.txt` as (symbol, start, end-inclusive) rows."""
    file = root / "instruments" / f"{universe}.txt"
    if not file.exists():
        raise DataError(f"{file} not found; pick a universe from {root / 'instruments'}")
    frame = pd.read_csv(file, sep="\t", header=None, names=["symbol", "start", "end"])
    frame["symbol"] = frame["symbol"].astype(str).str.upper()
    return frame


def read_feature(file: Path, calendar: np.ndarray) -> tuple[int, np.ndarray]:
    """Read one `.day.bin` file: (start position, float64 values)."""
    raw = np.fromfile(file, dtype="<f4")
    if raw.size < 1 or not np.isfinite(raw[0]):
        raise DataError(f"{file} is empty or has no start position")
    start = int(raw[0])
    values = raw[1:].astype(np.float64)
    if start < 0 or start + values.size > calendar.size:
        raise DataError(f"{file} runs past the calendar ({start}+{values.size} > {calendar.size})")
    return start, values


def _symbol_frame(root: Path, symbol: str, calendar: np.ndarray) -> pd.DataFrame | None:
    folder = root / "features" / symbol.lower()
    if not folder.is_dir():
        return None
    columns: dict[str, tuple[int, np.ndarray]] = {}
    for name in FIELDS:
        file = folder / f"{name}.day.bin"
        if file.exists():
            columns[name] = read_feature(file, calendar)
    missing = [f for f in REQUIRED if f not in columns]
    if missing:
        raise DataError(f"{folder} lacks fields {missing}")
    lo = min(s for s, _ in columns.values())
    hi = max(s + v.size for s, v in columns.values())
    frame = pd.DataFrame({"date": calendar[lo:hi].astype("datetime64[ns]")})
    for name, (start, values) in columns.items():
        col = np.full(hi - lo, np.nan)
        col[start - lo : start - lo + values.size] = values
        frame[name] = col
    frame["symbol"] = symbol
    return frame.dropna(subset=["close"]).reset_index(drop=True)


def import_qlib(opts: QlibImport, progress: ImportProgress | None = None) -> Manifest:
    """Import a Qlib folder's instruments (optionally one universe) as a dataset;
    `progress(phase, done, total)` hears each phase (the features symbol by symbol)."""
    report = progress or no_progress
    root = Path(opts.source)
    calendar = read_calendar(root)
    listing = read_instruments(root, opts.universe)
    frames = []
    phase = f"reading features of {opts.universe}"
    for i, symbol in enumerate(listing["symbol"]):
        report(phase, i, len(listing))
        if (frame := _symbol_frame(root, symbol, calendar)) is not None:
            frames.append(frame)
    report(phase, len(listing), len(listing))
    if not frames:
        raise DataError(
            f"no feature folders under {root / 'features'} for universe {opts.universe}"
        )
    report(f"converting prices of {len(frames):,} symbols", 0, 1)
    frame = pd.concat(frames, ignore_index=True)
    factor = frame["factor"].to_numpy() if "factor" in frame else np.ones(len(frame))
    factor = np.where(np.isfinite(factor) & (factor > 0), factor, np.nan)
    if np.isnan(factor).any():
        raise DataError(f"{root}: factor.day.bin holds NaN or non-positive values")
    bars = pd.DataFrame({"date": frame["date"], "symbol": frame["symbol"]})
    tick = 0.01 if opts.market == "cn" else None
    for col in ("open", "high", "low", "close"):
        raw = frame[col].to_numpy() / factor
        bars[col] = np.round(np.round(raw / tick) * tick, 6) if tick else raw
    bars["adj_factor"] = factor
    volume = frame["volume"].to_numpy()
    bars["volume"] = volume * factor if opts.volume == "adjusted" else volume
    bars["amount"] = frame["amount"].to_numpy() if "amount" in frame else np.nan
    change = frame["change"] * 100.0 if "change" in frame else None
    index = None
    if opts.index_symbol:
        index = _index_from(root, opts.index_symbol, calendar)
    membership = None
    if opts.membership_universe:
        members = read_instruments(root, opts.membership_universe)
        end = pd.to_datetime(members["end"]) + pd.Timedelta(days=1)
        membership = pd.DataFrame(
            {"symbol": members["symbol"], "start": pd.to_datetime(members["start"]), "end": end}
        )
    return assemble_dataset(
        opts.out,
        bars,
        market=opts.market,
        name=opts.name or root.name,
        price_basis="raw_with_factor",
        sources=[f"qlib:{root.name}/{opts.universe}"],
        index=index,
        membership=membership,
        reported_change=change,
        progress=progress,
    )


def _index_from(root: Path, symbol: str, calendar: np.ndarray) -> pd.DataFrame:
    frame = _symbol_frame(root, symbol.upper(), calendar)
    if frame is None:
        raise DataError(f"index {symbol} has no folder under {root / 'features'}")
    out = frame[["date", "symbol", "open", "high", "low", "close", "volume"]].copy()
    return out.reset_index(drop=True)
