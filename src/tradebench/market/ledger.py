"""The account ledger: cash and holdings. It records fills and nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from typing import NamedTuple

import numpy as np


@dataclass
class Holding:
    """Shares held in one symbol; `available` are sellable today (T+1)."""

    shares: int
    available: int


class PositionSnapshot(NamedTuple):
    """One holding as an agent sees it at decision time (priced at T-1's close).

    A NamedTuple: immutable and cheap; `AccountSnapshot.positions` builds them on demand.
    """

    symbol: str
    shares: int
    available: int
    close: float
    weight: float


def _frozen(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)
    return values


class Book(NamedTuple):
    """The holdings as columns, sorted by symbol: what every per-day pass over them reads.

    Built once per use in one pass over the holdings, so marking, snapshots and
    distributions are array operations instead of a Python loop per holding.
    """

    symbols: list[str]
    cols: np.ndarray
    """Panel column of each symbol (int64)."""
    shares: np.ndarray
    """Shares held (int64)."""
    available: np.ndarray
    """Shares sellable today (int64)."""


@dataclass(frozen=True, eq=False)
class AccountSnapshot:
    """The account at decision time: cash, NAV and holdings at T-1's close.

    The holdings are columns (sorted by symbol, read-only arrays); `positions` gives the
    same holdings as `PositionSnapshot`s, built on first use only.
    """

    cash: float
    nav: float
    symbols: tuple[str, ...] = ()
    cols: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Column of each holding in the market's arrays (`MarketView` windows)."""
    shares: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    available: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    close: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """T-1's raw close of each holding."""
    weight: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Each holding's share of `nav` at that close."""

    @cached_property
    def positions(self) -> tuple[PositionSnapshot, ...]:
        """The holdings as `PositionSnapshot`s, sorted by symbol."""
        return tuple(
            map(
                PositionSnapshot,
                self.symbols,
                self.shares.tolist(),
                self.available.tolist(),
                self.close.tolist(),
                self.weight.tolist(),
            )
        )

    def holding(self, symbol: str) -> PositionSnapshot | None:
        """The position in `symbol`, or None when flat."""
        return next((p for p in self.positions if p.symbol == symbol), None)


class LiveHolding:
    """One open position of an `Account`, read and written through to its columns."""

    __slots__ = ("_account", "_slot")

    def __init__(self, account: Account, slot: int):
        self._account, self._slot = account, slot

    @property
    def shares(self) -> int:
        """Shares held."""
        return int(self._account._shares[self._slot])

    @shares.setter
    def shares(self, value: int) -> None:
        self._account._shares[self._slot] = value

    @property
    def available(self) -> int:
        """Shares sellable today."""
        return int(self._account._available[self._slot])

    @available.setter
    def available(self, value: int) -> None:
        self._account._available[self._slot] = value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LiveHolding | Holding):
            return (self.shares, self.available) == (other.shares, other.available)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Holding(shares={self.shares}, available={self.available})"


class Account:
    """Cash plus holdings. Cash never goes negative: the broker checks before filling.

    Holdings are columns: one slot per symbol ever held (share and sellable counts, and
    whether the position is open), so the daily passes over the book (unlock, marks,
    snapshots, distributions) are array operations. `holdings` shows the open positions
    as a dict of `LiveHolding`s that write through.
    """

    def __init__(self, cash: float):
        self.cash = float(cash)
        self._slot: dict[str, int] = {}
        self._symbols = np.empty(0, dtype=object)
        self._shares = np.zeros(0, dtype=np.int64)
        self._available = np.zeros(0, dtype=np.int64)
        self._open = np.zeros(0, dtype=bool)
        self._sorted: np.ndarray | None = None
        self._cols: tuple[dict[str, int], np.ndarray] | None = None

    # ------------------------------------------------------------- holdings
    @property
    def holdings(self) -> dict[str, LiveHolding]:
        """Open positions by symbol, sorted by symbol (writes go through to the account)."""
        order = self._order()
        return {self._symbols[i]: LiveHolding(self, int(i)) for i in order[self._open[order]]}

    @holdings.setter
    def holdings(self, value: Mapping[str, Holding | LiveHolding]) -> None:
        rows = [(symbol, h.shares, h.available) for symbol, h in value.items()]
        self._shares[:] = 0
        self._available[:] = 0
        self._open[:] = False
        for symbol, shares, available in rows:
            slot = self._slot_of(symbol)
            self._shares[slot], self._available[slot] = shares, available
            self._open[slot] = True

    def _slot_of(self, symbol: str) -> int:
        slot = self._slot.get(symbol)
        if slot is not None:
            return slot
        slot = len(self._slot)
        if slot == len(self._shares):  # grow the columns
            size = max(64, 2 * slot)
            self._symbols = np.concatenate([self._symbols, np.empty(size - slot, object)])
            self._shares = np.concatenate([self._shares, np.zeros(size - slot, np.int64)])
            self._available = np.concatenate([self._available, np.zeros(size - slot, np.int64)])
            self._open = np.concatenate([self._open, np.zeros(size - slot, bool)])
        self._symbols[slot] = symbol
        self._slot[symbol] = slot
        self._sorted = None
        return slot

    def _order(self) -> np.ndarray:
        """Slots sorted by symbol (cached until a new symbol gets a slot)."""
        if self._sorted is None:
            n = len(self._slot)
            self._sorted = np.array(
                sorted(range(n), key=self._symbols.__getitem__), dtype=np.int64
            ).reshape(n)
        return self._sorted

    def _columns(self, column: dict[str, int]) -> np.ndarray:
        """Panel column of every slot under `column`, -1 where it has none (kept for the
        same mapping object, extended as slots are added)."""
        n = len(self._slot)
        done = self._cols[1] if self._cols is not None and self._cols[0] is column else None
        if done is not None and len(done) == n:
            return done
        done = np.zeros(0, np.int64) if done is None else done
        more = [column.get(s, -1) for s in self._symbols[len(done) : n].tolist()]
        cols = np.concatenate([done, np.asarray(more, dtype=np.int64)])
        self._cols = (column, cols)
        return cols

    # ------------------------------------------------------------- ledger
    def unlock(self) -> None:
        """Start of a trading day: everything bought before today becomes sellable."""
        np.copyto(self._available, self._shares)

    def shares(self, symbol: str) -> int:
        """Shares held in `symbol` (0 when flat)."""
        slot = self._slot.get(symbol)
        return int(self._shares[slot]) if slot is not None and self._open[slot] else 0

    def available(self, symbol: str) -> int:
        """Shares of `symbol` sellable today."""
        slot = self._slot.get(symbol)
        return int(self._available[slot]) if slot is not None and self._open[slot] else 0

    def positions_of(self, symbols: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Shares held and shares sellable today of each of `symbols` (0 when flat)."""
        n = len(symbols)
        slots = np.fromiter(map(self._slot.get, symbols, repeat(-1)), dtype=np.int64, count=n)
        seen = slots >= 0
        slots[~seen] = 0
        held = seen & self._open[slots] if len(self._open) else seen & False
        if not held.any():
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        return np.where(held, self._shares[slots], 0), np.where(held, self._available[slots], 0)

    def record_buy(
        self, symbol: str, qty: int, price: float, cost: float, t_plus_one: bool
    ) -> None:
        """Book a buy fill: cash out, shares in (locked until tomorrow under T+1)."""
        self.cash -= qty * price + cost
        slot = self._slot_of(symbol)
        if not self._open[slot]:
            self._open[slot] = True
            self._shares[slot] = self._available[slot] = 0
        self._shares[slot] += qty
        if not t_plus_one:
            self._available[slot] += qty

    def record_sell(self, symbol: str, qty: int, price: float, cost: float) -> None:
        """Book a sell fill: shares out, cash in; a closed position disappears."""
        self.cash += qty * price - cost
        slot = self._slot[symbol]
        if not self._open[slot]:
            raise KeyError(symbol)
        self._shares[slot] -= qty
        self._available[slot] -= qty
        if self._shares[slot] == 0:
            self._open[slot] = False
            self._available[slot] = 0

    def credit_shares(self, symbol: str, new: int) -> None:
        """Add `new` shares to an open position, sellable at once (a share distribution)."""
        slot = self._slot[symbol]
        self._shares[slot] += new
        self._available[slot] += new

    # ------------------------------------------------------------- marking
    def book(self, column: dict[str, int]) -> Book:
        """The open positions as columns sorted by symbol (`column`: symbol -> panel
        column; a held symbol missing from it raises KeyError)."""
        order = self._order()
        held = order[self._open[order]]
        cols = self._columns(column)[held]
        if (cols < 0).any():
            raise KeyError(str(self._symbols[held[np.argmax(cols < 0)]]))
        return Book(
            symbols=self._symbols[held].tolist(),
            cols=cols,
            shares=self._shares[held],
            available=self._available[held],
        )

    def marks(
        self, close: np.ndarray, column: dict[str, int], book: Book | None = None
    ) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Held symbols (sorted), their share counts (float) and their prices from `close`;
        `book`: `self.book(column)` when already read, with no change to the account since."""
        book = book or self.book(column)
        return book.symbols, book.shares.astype(np.float64), close[book.cols]

    def nav(self, close: np.ndarray, column: dict[str, int], book: Book | None = None) -> float:
        """Cash plus holdings marked at `close` (a row of raw closes by column)."""
        _, shares, prices = self.marks(close, column, book)
        return self.cash + float(shares @ prices)

    def snapshot(
        self, close: np.ndarray, column: dict[str, int], book: Book | None = None
    ) -> AccountSnapshot:
        """Freeze the account for an agent, priced at `close` (T-1's raw closes)."""
        book = book or self.book(column)
        shares, prices = book.shares.astype(np.float64), close[book.cols]
        nav = self.cash + float(shares @ prices)
        weights = shares * prices / nav if nav > 0 else np.zeros_like(prices)
        return AccountSnapshot(
            cash=self.cash,
            nav=nav,
            symbols=tuple(book.symbols),
            cols=_frozen(book.cols.copy()),
            shares=_frozen(book.shares.copy()),
            available=_frozen(book.available.copy()),
            close=_frozen(prices),
            weight=_frozen(weights),
        )
