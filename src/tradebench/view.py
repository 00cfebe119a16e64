"""`MarketView`: the point-in-time gate, the only door through which agents see the market.

A view at decision time T (before T's open) shows bars strictly before T, so T-1's close is
the last visible price; membership as of T; text records with `ts_available <=` the
decision instant (`decision_time(T, market)`: the market's 09:30 local open on T, in UTC);
and trading-calendar helpers. Every array it returns is a read-only slice of the shared
panel (no per-step copy of the panel).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from tradebench.data.clock import DayLike, decision_ns, decision_time, to_day
from tradebench.data.dataset import Dataset
from tradebench.data.panel import Panel
from tradebench.data.records import Record, empty_records, to_record_list
from tradebench.errors import ConfigError

__all__ = ["DayLike", "MarketView", "decision_time", "to_day"]


class MarketView:
    """What an agent may know at decision time `as_of` (before that day's open).

    Args:
        source: a loaded `Dataset` (its panel is built once and shared) or a `Panel`.
        as_of: decision day T; rows with date < T are visible.
    """

    __slots__ = ("_market", "_panel", "as_of", "t")

    def __init__(self, source: Dataset | Panel, as_of: DayLike, market: str | None = None):
        panel = source.panel if isinstance(source, Dataset) else source
        self._panel = panel
        self._market = market or (source.market if isinstance(source, Dataset) else "cn")
        self.as_of = to_day(as_of)
        self.t = int(np.searchsorted(panel.dates, self.as_of, side="left"))

    # ----------------------------------------------------------------- calendar
    @property
    def market(self) -> str:
        """Market whose rules apply (`cn` or `us`)."""
        return self._market

    @property
    def calendar(self) -> np.ndarray:
        """Visible trading days (all strictly before T), ascending."""
        return self._panel.dates[: self.t]

    @property
    def last_day(self) -> np.datetime64 | None:
        """The last visible trading day (T-1), or None before the data starts."""
        return self._panel.dates[self.t - 1] if self.t > 0 else None

    @property
    def decision_time(self) -> pd.Timestamp:
        """The decision instant of T in UTC: the market's open on T (`decision_time`)."""
        return decision_time(self.as_of, self._market)

    def is_trading_day(self) -> bool:
        """Whether T itself is a trading day of the (public) calendar."""
        return self.t < len(self._panel.dates) and self._panel.dates[self.t] == self.as_of

    def next_trading_day(self) -> np.datetime64 | None:
        """The first trading day after T (the exchange calendar is public knowledge)."""
        pos = self.t + 1 if self.is_trading_day() else self.t
        return self._panel.dates[pos] if pos < len(self._panel.dates) else None

    def day_index(self, day: DayLike) -> int:
        """Trading-day offset of `day` relative to T (T = 0, T-1 = -1) on the calendar."""
        pos = int(np.searchsorted(self._panel.dates, to_day(day), side="left"))
        return pos - self.t

    # ------------------------------------------------------------------ symbols
    @property
    def symbols(self) -> np.ndarray:
        """All symbols of the dataset (the column axis of every window)."""
        return self._panel.symbols

    def column(self, symbol: str) -> int:
        """Column of a symbol in the windows; -1 when the dataset does not have it."""
        return self._panel.column(symbol)

    def member_mask(self) -> np.ndarray:
        """Boolean (N,) mask of symbols in the universe at T.

        With a membership table: intervals `start <= T < end`. Without one: every symbol
        that had a bar on T-1.
        """
        membership = self._panel.membership
        if membership is None:
            if self.t == 0:
                return np.zeros(len(self.symbols), dtype=bool)
            return self._panel.listed[self.t - 1].copy()
        return _members_at(self._panel, self.as_of)

    def member_window(self, lookback: int | None = None) -> np.ndarray:
        """Boolean (L, N) universe of each of the last `lookback` visible days.

        Row s is `member_mask` as it was on that day (intervals `start <= day < end`, or
        the symbols with a bar on the day before). Past membership is public at T, so a
        model trained before T can use the index as it stood on each training day.
        """
        start = 0 if lookback is None else max(0, self.t - lookback)
        rows = np.arange(start, self.t)
        out = np.zeros((rows.size, len(self.symbols)), dtype=bool)
        intervals = self._panel.membership
        if intervals is None:
            out[rows > 0] = self._panel.listed[rows[rows > 0] - 1]
            return out
        days = self._panel.dates[rows]
        keep = intervals.column >= 0
        lo, hi = intervals.start[keep][:, None], intervals.end[keep][:, None]
        which, day = np.nonzero((lo <= days[None, :]) & (days[None, :] < hi))
        out[day, intervals.column[keep][which]] = True
        return out

    def members(self) -> np.ndarray:
        """Symbols in the universe at T, in column order."""
        return self.symbols[self.member_mask()]

    def board(self, symbol: str) -> str:
        """Board of a symbol (static reference data)."""
        return str(self._panel.boards[self._require(symbol)])

    @property
    def boards(self) -> np.ndarray:
        """Board per column (static reference data)."""
        return self._panel.boards

    @property
    def limit_threshold(self) -> np.ndarray:
        """Engine limit threshold per column (0.095 main, 0.195 ChiNext/STAR; 0 = none)."""
        return self._panel.limit_threshold

    @property
    def column_map(self) -> dict[str, int]:
        """Symbol -> column of every window (static reference data)."""
        return self._panel.column_map

    @property
    def limit_pct(self) -> np.ndarray:
        """Nominal daily price limit per column (0.10 = ±10%; 0 = none)."""
        return self._panel.limit_pct

    # --------------------------------------------------------------------- data
    def window(self, field: str, lookback: int | None = None) -> np.ndarray:
        """Read-only (L, N) rows of `field` for the last `lookback` visible days.

        Fields: `open, high, low, close, volume, amount, adj_factor` (raw), `adj_open ..
        adj_close` (adjusted), `suspended`, `listed`.
        """
        arr = self._field(field)
        start = 0 if lookback is None else max(0, self.t - lookback)
        return arr[start : self.t]

    def last(self, field: str) -> np.ndarray:
        """Read-only (N,) values of `field` on T-1; NaN row before the data starts."""
        if self.t == 0:
            return np.full(len(self.symbols), np.nan)
        return self._field(field)[self.t - 1]

    def index_window(self, field: str = "close", lookback: int | None = None) -> np.ndarray:
        """The benchmark index's `field` over the last `lookback` visible days."""
        start = 0 if lookback is None else max(0, self.t - lookback)
        return self._panel.index[field][start : self.t]

    def history(self, symbol: str, lookback: int = 20, adjusted: bool = False) -> pd.DataFrame:
        """One symbol's last `lookback` visible bars as a DataFrame indexed by date."""
        col = self._require(symbol)
        start = max(0, self.t - lookback)
        names = ("open", "high", "low", "close")
        data: dict[str, Any] = {
            n: self._field(f"adj_{n}" if adjusted else n)[start : self.t, col] for n in names
        }
        data["volume"] = self._field("volume")[start : self.t, col]
        data["suspended"] = self._field("suspended")[start : self.t, col]
        frame = pd.DataFrame(data, index=pd.DatetimeIndex(self.calendar[start:], name="date"))
        return frame[self._field("listed")[start : self.t, col]]

    # ------------------------------------------------------------------ records
    def records(
        self,
        symbols: str | Iterable[str] | None = None,
        kinds: str | Iterable[str] | None = None,
        limit: int | None = None,
        lookback: pd.Timedelta | str | None = None,
    ) -> pd.DataFrame:
        """Text records available at the decision instant, oldest first (newest last).

        A record is returned when `ts_available <= self.decision_time` (and, with
        `lookback`, `ts_available > decision_time - lookback`); records without a
        `ts_available` never are. Ties are ordered by `record_id`.

        Args:
            symbols: keep records naming any of these symbols (None: all records).
            kinds: keep these kinds, e.g. `"news"` or `["news", "filing"]` (None: all).
            limit: keep only the newest `limit` rows after filtering.
            lookback: how far back from the decision instant, e.g. `"7D"`.

        Returns:
            A new frame with the columns `record_id, kind, symbols, ts_event, ts_available,
            source, title, body, url, sha256` (UTC stamps, `symbols` as tuples).

        Raises:
            ConfigError: a negative `limit` or a non-positive or unreadable `lookback`.
        """
        index = self._panel.records
        if index is None:
            return empty_records()
        cutoff = decision_ns(self.as_of, self._market)
        pos = index.visible(
            cutoff,
            symbols=_names(symbols),
            kinds=_names(kinds),
            after_ns=None if lookback is None else cutoff - _lookback_ns(lookback),
            limit=_limit(limit),
        )
        return index.frame.iloc[pos].reset_index(drop=True)

    def record_list(
        self,
        symbols: str | Iterable[str] | None = None,
        kinds: str | Iterable[str] | None = None,
        limit: int | None = None,
        lookback: pd.Timedelta | str | None = None,
    ) -> list[Record]:
        """`records(...)` as typed `Record`s, in the same order."""
        return to_record_list(self.records(symbols, kinds, limit, lookback))

    def record(self, record_id: str) -> Record:
        """One visible record by id.

        Raises:
            KeyError: no such record, or it is not yet available at the decision instant
                (the two are indistinguishable on purpose).
        """
        index = self._panel.records
        pos = None if index is None else index.by_id.get(record_id)
        if pos is None or index.available_ns[pos] > decision_ns(self.as_of, self._market):
            raise KeyError(f"no record {record_id!r} is available at this decision time")
        return to_record_list(index.frame.iloc[[pos]])[0]

    def _field(self, field: str) -> np.ndarray:
        panel = self._panel
        if field in panel.fields:
            return panel.fields[field]
        if field in panel.adjusted:
            return panel.adjusted[field]
        if field == "suspended":
            return panel.suspended
        if field == "listed":
            return panel.listed
        raise KeyError(f"unknown field {field!r}")

    def _require(self, symbol: str) -> int:
        col = self._panel.column(symbol)
        if col < 0:
            raise KeyError(f"unknown symbol {symbol!r}")
        return col


def _names(value: str | Iterable[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _limit(limit: int | None) -> int | None:
    if limit is not None and limit < 0:
        raise ConfigError(f"records(limit={limit}) must be >= 0")
    return limit


def _lookback_ns(lookback: pd.Timedelta | str) -> int:
    try:
        span = pd.Timedelta(lookback)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"records(lookback={lookback!r}) is not a duration ({exc})") from None
    if pd.isna(span) or span <= pd.Timedelta(0):
        raise ConfigError(f"records(lookback={lookback!r}) must be a positive duration")
    return int(span.as_unit("ns").value)


def _members_at(panel: Panel, day: np.datetime64) -> np.ndarray:
    intervals = panel.membership
    active = (intervals.start <= day) & (day < intervals.end) & (intervals.column >= 0)
    mask = np.zeros(len(panel.symbols), dtype=bool)
    mask[intervals.column[active]] = True
    return mask
