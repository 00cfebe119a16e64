"""Export a dataset (or a subset of symbols and dates) as a Qlib binary data folder.

The folder is what Qlib's `qlib.init(provider_uri=...)` reads and what `import_qlib` reads
back: `calendars/day.txt`, `instruments/all.txt` (every exported symbol, first and last bar),
`instruments/<membership_universe>.txt` (the point-in-time membership intervals, inclusive
ends snapped to trading days) and `features/<symbol lower>/<field>.day.bin` (little-endian
float32: the start position in the calendar, then one value a day, dense from the symbol's
first to its last bar).

Qlib's conventions are followed: prices are adjusted (raw x factor), `factor` is the
adjustment factor, `volume` is adjusted (shares / factor), `change` is the adjusted
close-to-close change as a fraction (against the last traded close across a suspension).
Suspended bars: Qlib treats a stock as suspended only where `$close` is NaN, so by default
(`suspended="nan"`) every field of a suspended bar is written NaN, as Qlib's own collector
does; `import_qlib` then drops those bars, which the broker also treats as untradable.
`suspended="flat"` keeps the flat zero-volume bar instead (an exact round trip through
`import_qlib`, which re-flags it as suspended; Qlib would trade on it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from tradebench.data.clock import to_day
from tradebench.data.dataset import Dataset
from tradebench.data.panel import Panel
from tradebench.errors import DataError

PRICE_FIELDS = ("open", "high", "low", "close")
SuspendedPolicy = Literal["nan", "flat"]


@dataclass(frozen=True)
class QlibExport:
    """Options of a Qlib-folder export.

    Attributes:
        out: folder to create (must be absent or empty).
        symbols: subset to export; empty = every symbol with a bar in the window.
        start / end: first and last date kept (inclusive, `YYYY-MM-DD`); None = all.
        membership_universe: name of the instruments file written from the membership
            intervals (e.g. `csi300`); None = no membership file.
        suspended: `nan` (Qlib sees the suspension) or `flat` (the flat bar, volume 0).
        include_index: also write the benchmark index's features (not listed in all.txt).
    """

    out: Path
    symbols: tuple[str, ...] = ()
    start: str | None = None
    end: str | None = None
    membership_universe: str | None = "csi300"
    suspended: SuspendedPolicy = "nan"
    include_index: bool = True


@dataclass(frozen=True)
class QlibExportResult:
    """What an export wrote."""

    root: Path
    calendar_start: str
    calendar_end: str
    n_days: int
    n_symbols: int
    n_bars: int
    n_suspended_nan: int
    universes: tuple[str, ...]
    index_symbol: str | None


def write_bin(file: Path, start: int, values: np.ndarray) -> None:
    """Write one `.day.bin`: float32 start position, then the values (little-endian)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    np.concatenate([[float(start)], np.asarray(values, dtype=np.float64)]).astype("<f4").tofile(
        file
    )


def _iso(day: np.datetime64) -> str:
    return str(np.datetime64(day, "D"))


def _window(panel: Panel, start: str | None, end: str | None) -> slice:
    """Calendar rows of [start, end] (inclusive)."""
    lo = 0 if start is None else int(np.searchsorted(panel.dates, to_day(start), "left"))
    hi = (
        len(panel.dates) if end is None else int(np.searchsorted(panel.dates, to_day(end), "right"))
    )
    if hi <= lo:
        raise DataError(
            f"no trading days between {start} and {end} in this dataset "
            f"({panel.dates[0]} .. {panel.dates[-1]})"
        )
    return slice(lo, hi)


def _columns(panel: Panel, symbols: tuple[str, ...], rows: slice) -> np.ndarray:
    """Panel columns to export: the requested symbols, or all with a bar in the window."""
    if not symbols:
        return np.flatnonzero(panel.listed[rows].any(axis=0))
    unknown = [s for s in symbols if panel.column(s) < 0]
    if unknown:
        raise DataError(f"symbols {unknown[:10]} have no bars in this dataset; check --symbols")
    return np.array(sorted({panel.column(s) for s in symbols}), dtype=np.int64)


def _hidden(panel: Panel, policy: SuspendedPolicy) -> np.ndarray:
    """(T, N) cells written as NaN: no bar, or a suspended bar under the `nan` policy."""
    return ~panel.listed | (panel.suspended if policy == "nan" else False)


def _change(panel: Panel, hidden: np.ndarray) -> np.ndarray:
    """Adjusted close-to-close change (fraction) against the last visible close; NaN when hidden.

    Computed on the whole history, so the first exported day still has its change.
    """
    adj = np.where(hidden, np.nan, panel.adjusted["adj_close"])
    last = pd.DataFrame(adj).ffill().to_numpy()
    prev = np.full_like(adj, np.nan)
    prev[1:] = last[:-1]
    return adj / prev - 1.0


def _symbol_fields(
    panel: Panel, col: int, rows: np.ndarray, hidden: np.ndarray, change: np.ndarray
) -> dict[str, np.ndarray]:
    """Qlib fields of one symbol over calendar rows `rows` (adjusted, NaN where hidden)."""
    f = panel.fields
    factor = f["adj_factor"][rows, col]
    out = {name: panel.adjusted[f"adj_{name}"][rows, col] for name in PRICE_FIELDS}
    out["volume"] = f["volume"][rows, col] / factor
    out["factor"] = factor
    out["change"] = change[rows, col]
    amount = f["amount"][rows, col]
    if np.isfinite(amount).any():
        out["amount"] = amount
    mask = hidden[rows, col]
    return {name: np.where(mask, np.nan, values) for name, values in out.items()}


def _write_symbols(
    root: Path, panel: Panel, cols: np.ndarray, rows: slice, policy: SuspendedPolicy
) -> tuple[pd.DataFrame, int, int]:
    """Write every symbol's features; returns (all.txt listing, bars written, NaN bars)."""
    hidden = _hidden(panel, policy)
    change = _change(panel, hidden)
    listed = panel.listed[rows]
    calendar = panel.dates[rows]
    listing, n_bars, n_nan = [], 0, 0
    for col in cols:
        on = np.flatnonzero(listed[:, col])
        if on.size == 0:
            continue
        first, last = int(on[0]), int(on[-1])
        span = np.arange(rows.start + first, rows.start + last + 1)
        symbol = str(panel.symbols[col])
        folder = root / "features" / symbol.lower()
        for name, values in _symbol_fields(panel, int(col), span, hidden, change).items():
            write_bin(folder / f"{name}.day.bin", first, values)
        listing.append((symbol, _iso(calendar[first]), _iso(calendar[last])))
        n_bars += int(on.size)
        n_nan += int(hidden[span, col].sum() - (~listed[first : last + 1, col]).sum())
    return pd.DataFrame(listing, columns=["symbol", "start", "end"]), n_bars, n_nan


def membership_lines(
    membership: pd.DataFrame, calendar: np.ndarray, symbols: set[str]
) -> pd.DataFrame:
    """Half-open membership intervals as Qlib's inclusive ones, snapped to `calendar`.

    A member on T when `start <= T < end` becomes `first trading day >= start` ..
    `last trading day < end` (a null end runs to the calendar's last day); intervals with
    no trading day inside the calendar, and symbols not exported, are left out.
    """
    frame = membership[membership["symbol"].astype(str).isin(symbols)]
    start = frame["start"].to_numpy().astype("datetime64[D]")
    end = frame["end"].to_numpy().astype("datetime64[D]")
    end = np.where(np.isnat(end), calendar[-1] + np.timedelta64(1, "D"), end)
    lo = np.searchsorted(calendar, start, "left")
    hi = np.searchsorted(calendar, end, "left") - 1
    keep = (lo <= hi) & (lo < len(calendar)) & (hi >= 0)
    out = pd.DataFrame(
        {
            "symbol": frame["symbol"].astype(str).to_numpy()[keep],
            "start": [_iso(calendar[i]) for i in lo[keep]],
            "end": [_iso(calendar[i]) for i in hi[keep]],
        }
    )
    return out.sort_values(["symbol", "start"], kind="stable").reset_index(drop=True)


def write_instruments(root: Path, universe: str, lines: pd.DataFrame) -> None:
    """Write `instruments/<universe>.txt`: `SYMBOL<TAB>start<TAB>end`, end inclusive."""
    folder = root / "instruments"
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{s}\t{a}\t{b}\n" for s, a, b in lines[["symbol", "start", "end"]].to_numpy())
    (folder / f"{universe}.txt").write_text(text)


def _write_index(root: Path, index: pd.DataFrame, calendar: np.ndarray) -> str | None:
    """Write the benchmark's features on the export calendar (factor 1); its symbol or None."""
    if index is None or index.empty:
        return None
    symbol = str(index["symbol"].iloc[0])
    day = index["date"].to_numpy().astype("datetime64[D]")
    pos = np.searchsorted(calendar, day)
    ok = (pos < len(calendar)) & (calendar[np.minimum(pos, len(calendar) - 1)] == day)
    if not ok.any():
        return None
    cols = {k: np.full(len(calendar), np.nan) for k in (*PRICE_FIELDS, "volume")}
    for name, values in cols.items():
        values[pos[ok]] = index[name].to_numpy(dtype=np.float64)[ok]
    close = pd.Series(cols["close"])
    cols["change"] = (close / close.ffill().shift(1) - 1.0).to_numpy()
    cols["factor"] = np.where(np.isfinite(cols["close"]), 1.0, np.nan)
    on = np.flatnonzero(np.isfinite(cols["close"]))
    first, last = int(on[0]), int(on[-1])
    for name, values in cols.items():
        write_bin(
            root / "features" / symbol.lower() / f"{name}.day.bin", first, values[first : last + 1]
        )
    return symbol


def export_qlib(dataset: Dataset, opts: QlibExport) -> QlibExportResult:
    """Write `dataset` (optionally a subset) as a Qlib data folder at `opts.out`."""
    root = Path(opts.out)
    if root.exists() and any(root.iterdir()):
        raise DataError(f"{root} is not empty; export into a new or empty folder")
    panel = dataset.panel
    rows = _window(panel, opts.start, opts.end)
    calendar = panel.dates[rows]
    cols = _columns(panel, tuple(opts.symbols), rows)
    (root / "calendars").mkdir(parents=True, exist_ok=True)
    (root / "calendars" / "day.txt").write_text("".join(f"{_iso(d)}\n" for d in calendar))
    listing, n_bars, n_nan = _write_symbols(root, panel, cols, rows, opts.suspended)
    if listing.empty:
        raise DataError("no bars to export in this window for these symbols")
    write_instruments(root, "all", listing)
    universes = ["all"]
    if opts.membership_universe and dataset.membership is not None:
        lines = membership_lines(dataset.membership, calendar, set(listing["symbol"]))
        write_instruments(root, opts.membership_universe, lines)
        universes.append(opts.membership_universe)
    index_symbol = None
    if opts.include_index and dataset.index is not None:
        index_symbol = _write_index(root, dataset.index, calendar)
    return QlibExportResult(
        root=root,
        calendar_start=_iso(calendar[0]),
        calendar_end=_iso(calendar[-1]),
        n_days=len(calendar),
        n_symbols=len(listing),
        n_bars=n_bars,
        n_suspended_nan=n_nan,
        universes=tuple(universes),
        index_symbol=index_symbol,
    )
