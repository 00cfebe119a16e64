"""The broker: executes orders in sequence at the day's open under `MarketRules`.

Every order yields an `OrderRecord`; a refused order carries a `RejectCode` and a message,
and the step goes on. Nothing is silently corrected: a BUY larger than the cash left is
cut to the largest affordable lot count and recorded as `partial`. A message never names
the symbol (the record's `symbol` does), so it holds no identifier that masking would have
to find in prose. Orders are executed one at a time (`market.single`) or, for long lists on
distinct symbols, as array passes (`market.batch`); both write the same records.
"""

from __future__ import annotations

from tradebench.market.batch import execute_batch
from tradebench.market.ledger import Account
from tradebench.market.orders import Order, OrderRecord
from tradebench.market.single import DayQuotes, ExecutionContext, Universe, execute_one

__all__ = ["BATCH_MIN_ORDERS", "DayQuotes", "ExecutionContext", "Universe", "execute_orders"]

BATCH_MIN_ORDERS = 50
"""From this many orders on distinct symbols up, `market.batch` judges them as arrays;
below it the per-order path is faster (the array path costs a fixed ~60 array calls per
step, the per-order path a few microseconds per order; `perf/broker.py` measures both)."""


def execute_orders(
    orders: list[Order], account: Account, quotes: DayQuotes, ctx: ExecutionContext
) -> list[OrderRecord]:
    """Execute `orders` in the given order against `account`; one record per order.

    With no repeated symbol, no order changes what another is judged on except the cash,
    so a long order list is checked and sized as array passes and only the cash is walked
    in order (`market.batch`); otherwise every order is executed in turn. Both paths write
    the same records.
    """
    symbols = [order.stock_id for order in orders]
    if len(orders) >= BATCH_MIN_ORDERS and len(set(symbols)) == len(symbols):
        return execute_batch(orders, symbols, account, quotes, ctx)
    return [execute_one(order, account, quotes, ctx) for order in orders]
