"""One order at a time at the day's open under `MarketRules`: the broker's reference path
(`market.broker.execute_orders` sends short or repeated-symbol order lists here and long
ones to the array path `market.batch`, which writes the same records).

Every order yields an `OrderRecord`; a refused order carries a `RejectCode` and a message,
and the step goes on. Nothing is silently corrected: a BUY larger than the cash left is
cut to the largest affordable lot count and recorded as `partial`. A message never names
the symbol (the record's `symbol` does), so it holds no identifier that masking would have
to find in prose.
"""

from __future__ import annotations

import math
from collections.abc import Container
from dataclasses import dataclass

import numpy as np

from tradebench.market.ledger import Account
from tradebench.market.orders import Order, OrderRecord, RejectCode
from tradebench.market.rules import MarketRules, tradability


@dataclass(frozen=True)
class DayQuotes:
    """Day T's raw quotes by column, plus the reference close for price limits.

    `prev_close` is T-1's raw close (used to convert target weights); `ref_close` is the
    limit reference (T-1's close adjusted for an ex-dividend on T).
    """

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    prev_close: np.ndarray
    ref_close: np.ndarray
    suspended: np.ndarray
    threshold: np.ndarray
    column: dict[str, int]


@dataclass(frozen=True)
class Universe:
    """A day's universe as a mask over the panel's columns: answers `symbol in universe`
    like the set of member symbols, without building that set every step."""

    mask: np.ndarray
    column: dict[str, int]

    def __contains__(self, symbol: object) -> bool:
        col = self.column.get(symbol, -1)  # type: ignore[call-overload]
        return col >= 0 and bool(self.mask[col])


@dataclass(frozen=True)
class ExecutionContext:
    """What the broker knows about the step: the rules, NAV at T-1's close, the universe
    (a set of symbols or a `Universe`)."""

    rules: MarketRules
    nav_prev: float
    universe: Container[str]


def _reject(order: Order, code: RejectCode, message: str, requested: int | None) -> OrderRecord:
    return OrderRecord(
        symbol=order.stock_id,
        side=order.side,
        requested_shares=requested,
        target_weight=order.target_weight,
        status="rejected",
        reject_code=code,
        message=message,
        confidence=order.confidence,
        reason=order.reason,
    )


def execute_one(order: Order, account: Account, q: DayQuotes, ctx: ExecutionContext) -> OrderRecord:
    symbol, side = order.stock_id, order.side
    col = q.column.get(symbol, -1)
    if side == "BUY" and symbol not in ctx.universe:
        return _reject(order, RejectCode.NOT_IN_UNIVERSE, "not in today's universe", order.shares)
    if side == "SELL" and account.shares(symbol) == 0:
        return _reject(order, RejectCode.NO_POSITION, "no position to sell", order.shares)
    if col < 0:
        return _reject(order, RejectCode.NOT_IN_UNIVERSE, "no market data", order.shares)
    code = tradability(
        side,
        open_=float(q.open[col]),
        high=float(q.high[col]),
        low=float(q.low[col]),
        ref_close=float(q.ref_close[col]),
        threshold=float(q.threshold[col]) if ctx.rules.price_limits else 0.0,
        suspended=bool(q.suspended[col]),
    )
    if code is not None:
        return _reject(order, code, f"cannot {side} today: {code.value}", order.shares)
    qty, problem = _quantity(order, account, float(q.prev_close[col]), ctx)
    if problem is not None:
        return _reject(order, problem[0], problem[1], qty)
    price = ctx.rules.fill_price(float(q.open[col]), side)
    if side == "SELL":
        return _sell(order, account, qty, price, ctx.rules)
    return _buy(order, account, qty, price, ctx.rules)


def _quantity(
    order: Order, account: Account, prev_close: float, ctx: ExecutionContext
) -> tuple[int, tuple[RejectCode, str] | None]:
    """Shares to trade, or a rejection. Weight orders convert at T-1's close, whole lots."""
    lot, held = ctx.rules.lot_size, account.shares(order.stock_id)
    if order.shares is not None:
        qty = order.shares
    else:
        if not prev_close > 0:
            return 0, (RejectCode.INVALID_ORDER, "no previous close")
        target = math.floor(order.target_weight * ctx.nav_prev / prev_close / lot) * lot
        qty = target - held if order.side == "BUY" else held - target
        if qty <= 0:
            word = "above" if order.side == "BUY" else "below"
            return 0, (
                RejectCode.INVALID_ORDER,
                f"target_weight {order.target_weight:g} is not "
                f"{word} the current weight; nothing to {order.side}",
            )
    if order.side == "BUY":
        if qty % lot:
            return qty, (RejectCode.LOT_SIZE, f"BUY {qty} is not a multiple of {lot} shares")
        return qty, None
    if qty > held:
        return qty, (RejectCode.INVALID_ORDER, f"SELL {qty} exceeds the {held} held")
    if qty > account.available(order.stock_id):
        return qty, (
            RejectCode.T1_LOCKED,
            f"only {account.available(order.stock_id)} of {held} shares are sellable today (T+1)",
        )
    if qty % lot and qty != held:
        return qty, (
            RejectCode.LOT_SIZE,
            f"SELL {qty} is neither a multiple of {lot} nor the whole position",
        )
    return qty, None


def _sell(
    order: Order, account: Account, qty: int, price: float, rules: MarketRules
) -> OrderRecord:
    cost = rules.cost(qty * price, "SELL")
    account.record_sell(order.stock_id, qty, price, cost)
    return filled_record(order, qty, price, cost)


def filled_record(order: Order, shares: int, price: float, cost: float) -> OrderRecord:
    """The record of `order` filled whole: `shares` at `price`, paying `cost`."""
    return OrderRecord(
        symbol=order.stock_id,
        side=order.side,
        requested_shares=shares,
        target_weight=order.target_weight,
        filled_shares=shares,
        fill_price=price,
        cost=cost,
        status="filled",
        confidence=order.confidence,
        reason=order.reason,
    )


def _buy(order: Order, account: Account, qty: int, price: float, rules: MarketRules) -> OrderRecord:
    affordable = _affordable_lots(account.cash, price, rules) * rules.lot_size
    fill = min(qty, affordable)
    if fill <= 0:
        return _reject(
            order,
            RejectCode.INSUFFICIENT_CASH,
            f"cash {account.cash:,.2f} cannot buy one lot",
            qty,
        )
    cost = rules.cost(fill * price, "BUY")
    account.record_buy(order.stock_id, fill, price, cost, rules.t_plus_one)
    partial = fill < qty
    return OrderRecord(
        symbol=order.stock_id,
        side="BUY",
        requested_shares=qty,
        target_weight=order.target_weight,
        filled_shares=fill,
        fill_price=price,
        cost=cost,
        status="partial" if partial else "filled",
        reject_code=RejectCode.INSUFFICIENT_CASH if partial else None,
        message=f"cut from {qty} to {fill} shares: cash left" if partial else "",
        confidence=order.confidence,
        reason=order.reason,
    )


def _affordable_lots(cash: float, price: float, rules: MarketRules) -> int:
    """Largest lot count whose value plus cost fits in `cash`."""
    lot_value = price * rules.lot_size
    lots = int(cash / (lot_value * (1 + rules.buy_cost_bps / 1e4)))
    while lots > 0 and lots * lot_value + rules.cost(lots * lot_value, "BUY") > cash:
        lots -= 1
    return lots
