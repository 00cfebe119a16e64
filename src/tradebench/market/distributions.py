"""Dividends and share distributions: what a holder receives on an ex-date.

Raw prices drop on an ex-date; without this step a portfolio marked at raw prices would
lose every dividend. The adjustment factor tells the size of the distribution but not
its kind, so the rule is explicit: a factor step of up to `STOCK_THRESHOLD` (10%) is a
cash dividend; a larger step is a share distribution (bonus or transfer shares, common
in A-shares) paid in whole shares, with the fractional entitlement in cash. Either way
the holder keeps the value of the position at the previous close. A falling factor is a
data glitch (listed at import) and distributes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tradebench.market.ledger import Account, Book

STOCK_THRESHOLD = 0.10


@dataclass(frozen=True, slots=True)
class Distribution:
    """What one holding received on an ex-date: `cash` plus `shares` new shares, worth
    `value` at the ex price (the previous close over the factor step)."""

    symbol: str
    kind: Literal["cash", "shares"]
    cash: float
    shares: int
    value: float


def distribute(
    account: Account,
    factor_prev: np.ndarray,
    factor_now: np.ndarray,
    prev_close: np.ndarray,
    column: dict[str, int],
    book: Book | None = None,
) -> list[Distribution]:
    """Credit every holding's distribution for the day (factor step T-1 -> T).

    The factor steps of the whole book are one array pass; only the few holdings with an
    ex-date are credited one by one, in symbol order. `book`: `account.book(column)` when
    already read (the account unchanged since).
    """
    book = book or account.book(column)
    prev = factor_prev[book.cols]
    ratios = np.divide(
        factor_now[book.cols], prev, out=np.full(prev.shape, np.nan), where=prev != 0
    )
    closes = prev_close[book.cols]
    paying = np.isfinite(ratios) & (ratios > 1 + 1e-9) & (closes > 0)
    out = []
    for k in np.flatnonzero(paying).tolist():
        symbol, shares = book.symbols[k], int(book.shares[k])
        ratio, close = float(ratios[k]), float(closes[k])
        value = shares * close * (1 - 1 / ratio)
        if ratio - 1 <= STOCK_THRESHOLD:
            account.cash += value
            out.append(Distribution(symbol, "cash", value, 0, value))
            continue
        new = math.floor(shares * (ratio - 1) + 1e-9)
        rest = value - new * close / ratio
        account.credit_shares(symbol, new)
        account.cash += rest
        out.append(Distribution(symbol, "shares", rest, new, value))
    return out
