"""Dates x symbols arrays built once per dataset, the storage behind `MarketView`.

Every array is read-only: views hand out slices (no copies) and nobody can write
through them. Cells where a symbol has no bar (not yet listed, delisted) are NaN with
`listed=False`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from tradebench.data.boards import limit_arrays
from tradebench.data.records import RecordIndex, build_record_index

if TYPE_CHECKING:
    from tradebench.data.dataset import Dataset

PANEL_FIELDS = ("open", "high", "low", "close", "adj_factor", "volume", "amount")
ADJUSTED_FIELDS = ("open", "high", "low", "close")


@dataclass(frozen=True)
class MembershipIntervals:
    """Index membership as arrays: a member on day T when `start <= T < end`.

    `column` is the symbol's panel column, -1 for members without bars.
    """

    column: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass(frozen=True)
class Panel:
    """Point-in-time storage: row i holds day `dates[i]`, column j symbol `symbols[j]`.

    Attributes:
        dates: trading calendar, `datetime64[D]`, ascending.
        symbols: column labels (object array of str).
        fields: raw fields (`open, high, low, close, adj_factor, volume, amount`), (T, N).
        adjusted: adjusted prices `adj_open .. adj_close` = raw x factor, (T, N).
        suspended: True on suspension days, (T, N).
        listed: True where the symbol has a bar, (T, N).
        index: benchmark series aligned to `dates` (`open, high, low, close, volume`), (T,).
        limit_pct: nominal board limit per symbol, (N,).
        limit_threshold: engine limit threshold per symbol, (N,).
        boards: board name per symbol, (N,).
        membership: index membership intervals, or None without a membership table.
        column_map: symbol -> column.
        records: text evidence sorted for the gate, or None without a records table.
    """

    dates: np.ndarray
    symbols: np.ndarray
    fields: dict[str, np.ndarray]
    adjusted: dict[str, np.ndarray]
    suspended: np.ndarray
    listed: np.ndarray
    index: dict[str, np.ndarray]
    limit_pct: np.ndarray
    limit_threshold: np.ndarray
    boards: np.ndarray
    membership: MembershipIntervals | None
    column_map: dict[str, int]
    records: RecordIndex | None = None

    def column(self, symbol: str) -> int:
        """Column index of a symbol; -1 when unknown."""
        return self.column_map.get(symbol, -1)


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def build_panel(dataset: Dataset) -> Panel:
    """Scatter the long bars table into (T, N) arrays in one vectorised pass."""
    bars = dataset.bars
    day = bars["date"].to_numpy().astype("datetime64[D]")
    dates = np.unique(day)
    sym_codes, symbols = pd.factorize(bars["symbol"], sort=True)
    rows = np.searchsorted(dates, day)
    shape = (len(dates), len(symbols))
    fields: dict[str, np.ndarray] = {}
    for name in PANEL_FIELDS:
        arr = np.full(shape, np.nan)
        arr[rows, sym_codes] = bars[name].to_numpy(dtype=np.float64, na_value=np.nan)
        fields[name] = arr
    suspended = np.zeros(shape, dtype=bool)
    suspended[rows, sym_codes] = bars["suspended"].to_numpy(dtype=bool)
    listed = np.zeros(shape, dtype=bool)
    listed[rows, sym_codes] = True
    adjusted = {f"adj_{n}": fields[n] * fields["adj_factor"] for n in ADJUSTED_FIELDS}
    symbols = np.asarray(symbols, dtype=object)
    limit_pct, threshold = limit_arrays(symbols, dataset.market)
    boards = _boards(dataset, symbols)
    column_map = {str(s): i for i, s in enumerate(symbols)}
    return Panel(
        dates=_readonly(dates),
        symbols=_readonly(symbols),
        fields={k: _readonly(v) for k, v in fields.items()},
        adjusted={k: _readonly(v) for k, v in adjusted.items()},
        suspended=_readonly(suspended),
        listed=_readonly(listed),
        index=_index_series(dataset, dates),
        limit_pct=_readonly(limit_pct),
        limit_threshold=_readonly(threshold),
        boards=_readonly(boards),
        membership=_membership(dataset.membership, column_map),
        column_map=column_map,
        records=None if dataset.records is None else build_record_index(dataset.records),
    )


def _boards(dataset: Dataset, symbols: np.ndarray) -> np.ndarray:
    lookup = dict(zip(dataset.instruments["symbol"], dataset.instruments["board"], strict=True))
    return np.array([lookup.get(str(s), "other") for s in symbols], dtype=object)


def _index_series(dataset: Dataset, dates: np.ndarray) -> dict[str, np.ndarray]:
    out = {k: np.full(len(dates), np.nan) for k in ("open", "high", "low", "close", "volume")}
    idx = dataset.index
    if idx is not None and len(idx):
        day = idx["date"].to_numpy().astype("datetime64[D]")
        pos = np.searchsorted(dates, day)
        ok = (pos < len(dates)) & (dates[np.minimum(pos, len(dates) - 1)] == day)
        for k in out:
            out[k][pos[ok]] = idx[k].to_numpy(dtype=np.float64)[ok]
    return {k: _readonly(v) for k, v in out.items()}


def _membership(frame: pd.DataFrame | None, columns: dict[str, int]) -> MembershipIntervals | None:
    if frame is None:
        return None
    end = frame["end"].to_numpy().astype("datetime64[D]")
    return MembershipIntervals(
        column=_readonly(np.array([columns.get(str(s), -1) for s in frame["symbol"]], np.int64)),
        start=_readonly(frame["start"].to_numpy().astype("datetime64[D]")),
        end=_readonly(np.where(np.isnat(end), np.datetime64("9999-12-31"), end)),
    )
