"""Turn target weights into explicit lot-sized orders (sells first, then buys)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Order, shares_order
from tradebench.view import MarketView

Rounding = Literal["nearest", "floor"]


def rebalance_orders(
    targets: dict[str, float],
    view: MarketView,
    account: AccountSnapshot,
    lot_size: int,
    rounding: Rounding = "nearest",
) -> list[Order]:
    """Orders that move the account to `targets` (symbol -> weight of NAV at T-1's close).

    Quantities are whole lots of T-1's raw close: `nearest` rounds half up (a name whose
    target is under half a lot is skipped), `floor` never exceeds the target. Holdings not
    in `targets` are sold whole. Sells come first so their cash funds the buys; each side
    is in symbol order. A symbol the dataset does not have gets no order.
    """
    column = view.column_map
    known = [(column[s], w) for s, w in targets.items() if s in column]
    cols = np.array([c for c, _ in known], dtype=np.int64)
    weights = np.array([w for _, w in known], dtype=np.float64)
    return rebalance_columns(cols, weights, view, account, lot_size, rounding)


def rebalance_columns(
    cols: np.ndarray,
    weights: np.ndarray,
    view: MarketView,
    account: AccountSnapshot,
    lot_size: int,
    rounding: Rounding = "nearest",
) -> list[Order]:
    """`rebalance_orders` with the targets as view columns and their weights (distinct
    columns): one array pass over the targeted and held columns."""
    n = len(view.symbols)
    weight = np.zeros(n)
    weight[cols] = weights
    current = np.zeros(n, dtype=np.int64)
    current[account.cols] = account.shares
    involved = np.zeros(n, dtype=bool)
    involved[cols] = True
    involved[account.cols] = True
    idx = np.flatnonzero(involved)
    w, price = weight[idx], view.last("close")[idx]
    lots = w * account.nav / (price * lot_size)
    lots = np.floor(lots + 0.5) if rounding == "nearest" else np.floor(lots)
    desired = np.where(np.isfinite(lots), lots, 0).astype(np.int64) * lot_size
    delta = desired - current[idx]
    symbols = view.symbols
    sells = [
        shares_order(str(symbols[c]), "SELL", int(q))
        for c, q in _by_symbol(symbols, idx, -delta, (delta < 0) & np.isfinite(w))
    ]
    buys = [
        shares_order(str(symbols[c]), "BUY", int(q))
        for c, q in _by_symbol(symbols, idx, delta, (delta > 0) & np.isfinite(price))
    ]
    return sells + buys


def _by_symbol(
    symbols: np.ndarray, idx: np.ndarray, qty: np.ndarray, keep: np.ndarray
) -> list[tuple[int, int]]:
    """(column, quantity) of the kept rows, sorted by symbol."""
    picked = zip(idx[keep].tolist(), qty[keep].tolist(), strict=True)
    return sorted(picked, key=lambda cq: symbols[cq[0]])
