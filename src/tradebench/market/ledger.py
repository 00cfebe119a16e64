"""The account ledger: cash and holdings. It records fills and nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass
class Holding:
    """Shares held in one symbol; `available` are sellable today (T+1)."""

    shares: int
    available: int


class PositionSnapshot(NamedTuple):
    """One holding as an agent sees it at decision time (priced at T-1's close).

    A NamedTuple: immutable and cheap, since every step builds one per holding.
    """

    symbol: str
    shares: int
    available: int
    close: float
    weight: float


@dataclass(frozen=True)
class AccountSnapshot:
    """The account at decision time: cash, NAV and holdings at T-1's close."""

    cash: float
    nav: float
    positions: tuple[PositionSnapshot, ...]

    def holding(self, symbol: str) -> PositionSnapshot | None:
        """The position in `symbol`, or None when flat."""
        return next((p for p in self.positions if p.symbol == symbol), None)


class Account:
    """Cash plus holdings. Cash never goes negative: the broker checks before filling."""

    def __init__(self, cash: float):
        self.cash = float(cash)
        self.holdings: dict[str, Holding] = {}

    def unlock(self) -> None:
        """Start of a trading day: everything bought before today becomes sellable."""
        for h in self.holdings.values():
            h.available = h.shares

    def shares(self, symbol: str) -> int:
        """Shares held in `symbol` (0 when flat)."""
        h = self.holdings.get(symbol)
        return h.shares if h else 0

    def available(self, symbol: str) -> int:
        """Shares of `symbol` sellable today."""
        h = self.holdings.get(symbol)
        return h.available if h else 0

    def record_buy(
        self, symbol: str, qty: int, price: float, cost: float, t_plus_one: bool
    ) -> None:
        """Book a buy fill: cash out, shares in (locked until tomorrow under T+1)."""
        self.cash -= qty * price + cost
        h = self.holdings.setdefault(symbol, Holding(0, 0))
        h.shares += qty
        if not t_plus_one:
            h.available += qty

    def record_sell(self, symbol: str, qty: int, price: float, cost: float) -> None:
        """Book a sell fill: shares out, cash in; a closed position disappears."""
        self.cash += qty * price - cost
        h = self.holdings[symbol]
        h.shares -= qty
        h.available -= qty
        if h.shares == 0:
            del self.holdings[symbol]

    def marks(
        self, close: np.ndarray, column: dict[str, int]
    ) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Held symbols (sorted), their share counts and their prices from `close`."""
        symbols = sorted(self.holdings)
        cols = np.fromiter((column[s] for s in symbols), dtype=np.int64, count=len(symbols))
        shares = np.fromiter(
            (self.holdings[s].shares for s in symbols), dtype=np.float64, count=len(symbols)
        )
        return symbols, shares, close[cols]

    def nav(self, close: np.ndarray, column: dict[str, int]) -> float:
        """Cash plus holdings marked at `close` (a row of raw closes by column)."""
        _, shares, prices = self.marks(close, column)
        return self.cash + float(shares @ prices)

    def snapshot(self, close: np.ndarray, column: dict[str, int]) -> AccountSnapshot:
        """Freeze the account for an agent, priced at `close` (T-1's raw closes)."""
        symbols, shares, prices = self.marks(close, column)
        nav = self.cash + float(shares @ prices)
        weights = (shares * prices / nav if nav > 0 else np.zeros_like(prices)).tolist()
        positions = tuple(
            PositionSnapshot(s, self.holdings[s].shares, self.holdings[s].available, p, w)
            for s, p, w in zip(symbols, prices.tolist(), weights, strict=True)
        )
        return AccountSnapshot(cash=self.cash, nav=nav, positions=positions)
