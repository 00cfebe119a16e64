"""Turn target weights into explicit lot-sized orders (sells first, then buys)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Order
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
    in `targets` are sold whole. Sells come first so their cash funds the buys.
    """
    close = view.last("close")
    held = {p.symbol: p.shares for p in account.positions}
    symbols = sorted(set(targets) | set(held))
    cols = np.array([view.column(s) for s in symbols])
    price = np.where(cols >= 0, close[np.maximum(cols, 0)], np.nan)
    weight = np.array([targets.get(s, 0.0) for s in symbols])
    lots = weight * account.nav / (price * lot_size)
    lots = np.floor(lots + 0.5) if rounding == "nearest" else np.floor(lots)
    desired = np.where(np.isfinite(lots), lots, 0).astype(np.int64) * lot_size
    current = np.array([held.get(s, 0) for s in symbols], dtype=np.int64)
    delta = desired - current
    sells = [
        Order(stock_id=s, side="SELL", shares=int(-d))
        for s, d, w in zip(symbols, delta, weight, strict=True)
        if d < 0 and np.isfinite(w)
    ]
    buys = [
        Order(stock_id=s, side="BUY", shares=int(d))
        for s, d, p in zip(symbols, delta, price, strict=True)
        if d > 0 and np.isfinite(p)
    ]
    return sells + buys
