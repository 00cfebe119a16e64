"""The broker's array path: one step's orders on distinct symbols, judged together.

With no symbol repeated, an order's checks read only the account as it stood before the
step (its own holding) and the day's quotes, so every refusal (universe, position, data,
suspension, price limits, T+1, lots) and every weight-to-shares conversion is one array
pass over all orders. Only the cash links the orders: a BUY may be cut by what earlier
fills spent. `fill` walks that exactly: it forecasts the cash before every fill with a
sequential running sum (the same float operations, in the same order, as booking the
fills one by one), finds the first BUY that cannot fill in full, books everything before
it, hands that one to the sequential broker, and repeats from the next order.

The records equal those of `single.execute_one` for the same orders, bit for bit
(`tests/market/test_batch_broker.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

import numpy as np

from tradebench.market.ledger import Account
from tradebench.market.orders import Order, OrderRecord, RejectCode
from tradebench.market.rules import MarketRules
from tradebench.market.single import DayQuotes, ExecutionContext, _buy, _reject, filled_record

_CODES = tuple(RejectCode)
"""Refusals by index: the arrays below carry `_CODES.index(code)`, -1 for none."""
_NONE = -1
NOT_IN_UNIVERSE = _CODES.index(RejectCode.NOT_IN_UNIVERSE)
NO_POSITION = _CODES.index(RejectCode.NO_POSITION)
SUSPENDED = _CODES.index(RejectCode.SUSPENDED)
ONE_SIDED = _CODES.index(RejectCode.ONE_SIDED)
LIMIT_UP = _CODES.index(RejectCode.LIMIT_UP)
LIMIT_DOWN = _CODES.index(RejectCode.LIMIT_DOWN)
LOT_SIZE = _CODES.index(RejectCode.LOT_SIZE)
T1_LOCKED = _CODES.index(RejectCode.T1_LOCKED)
INVALID = _CODES.index(RejectCode.INVALID_ORDER)
_TRADABILITY = {
    RejectCode.SUSPENDED,
    RejectCode.ONE_SIDED,
    RejectCode.LIMIT_UP,
    RejectCode.LIMIT_DOWN,
}


@dataclass(frozen=True)
class Judged:
    """Per-order results of the checks: the refusal (an index into `RejectCode`, -1 for
    none) with its message, the quantity each record states, and the quantity, fill
    price and full-fill cost of the orders that passed."""

    code: np.ndarray
    messages: dict[int, str]
    requested: list[int | None]
    qty: np.ndarray
    price: np.ndarray
    cost: np.ndarray


@dataclass(frozen=True)
class _Facts:
    """What the refusal messages quote, by order."""

    member: np.ndarray
    held: np.ndarray
    available: np.ndarray
    unpriced: np.ndarray
    lot: int


def execute_batch(
    orders: list[Order],
    symbols: list[str],
    account: Account,
    q: DayQuotes,
    ctx: ExecutionContext,
) -> list[OrderRecord]:
    """Execute orders whose symbols are all distinct; one record per order, in order."""
    if not orders:
        return []
    return fill(orders, judge(orders, symbols, account, q, ctx), account, ctx.rules)


def judge(
    orders: list[Order],
    symbols: list[str],
    account: Account,
    q: DayQuotes,
    ctx: ExecutionContext,
) -> Judged:
    """Every check of `single.execute_one` before the cash, as array passes, in the
    same order of precedence (the first failing check names the refusal)."""
    n, rules = len(orders), ctx.rules
    lot = rules.lot_size
    given = [o.shares for o in orders]
    buy = np.array([o.side == "BUY" for o in orders], dtype=bool)
    sell = ~buy
    col = np.fromiter(map(q.column.get, symbols, repeat(-1)), dtype=np.int64, count=n)
    held, available = account.positions_of(symbols)
    member = np.fromiter(map(ctx.universe.__contains__, symbols), dtype=bool, count=n)
    c = np.maximum(col, 0)
    open_, high, low, ref = q.open[c], q.high[c], q.low[c], q.ref_close[c]
    # `rules.tradability`; NaN compares false, so no float warning arises here
    threshold = q.threshold[c] if rules.price_limits else np.zeros(n)
    limited = (threshold > 0) & (ref > 0)
    eps = 1e-9 * ref
    up = limited & (open_ >= ref * (1 + threshold) - eps)
    down = limited & (open_ <= ref * (1 - threshold) + eps)
    locked = (up | down) & (open_ == high) & (high == low)
    early = _first(
        (buy & ~member, NOT_IN_UNIVERSE),
        (sell & (held == 0), NO_POSITION),
        (col < 0, NOT_IN_UNIVERSE),
        (q.suspended[c] | ~(open_ > 0), SUSPENDED),
        (locked, ONE_SIDED),
        (up & buy, LIMIT_UP),
        (down & sell, LIMIT_DOWN),
    )
    qty = np.array([0 if s is None else s for s in given], dtype=np.int64)
    weighted = np.flatnonzero((early == _NONE) & np.array([s is None for s in given], bool))
    unsized, unpriced = _weights_to_shares(orders, weighted, buy, held, q.prev_close[c], ctx, qty)
    odd = qty % lot != 0
    code = early.copy()
    code[early == _NONE] = _first(
        (unsized, INVALID),
        (buy & odd, LOT_SIZE),
        (sell & (qty > held), INVALID),
        (sell & (qty > available), T1_LOCKED),
        (sell & odd & (qty != held), LOT_SIZE),
    )[early == _NONE]
    requested: list[int | None] = list(given)
    sized = np.flatnonzero(early == _NONE)  # these state the quantity they were judged on
    for k, shares in zip(sized.tolist(), qty[sized].tolist(), strict=True):
        requested[k] = shares
    facts = _Facts(member, held, available, unpriced, lot)
    refused = np.flatnonzero(code != _NONE).tolist()
    messages = {k: _message(orders[k], k, int(code[k]), requested[k], facts) for k in refused}
    price = _fill_price(open_, buy, rules)
    value = qty * price
    bps = np.where(buy, rules.buy_cost_bps, rules.sell_cost_bps)
    cost = np.where(value > 0, np.maximum(rules.min_cost, value * bps / 1e4), 0.0)
    return Judged(code, messages, requested, qty, price, cost)


def _first(*checks: tuple[np.ndarray, int]) -> np.ndarray:
    """Per order, the code of the first check whose mask is set (-1 when none is)."""
    code = np.full(len(checks[0][0]), _NONE, dtype=np.int64)
    for mask, value in reversed(checks):
        code[mask] = value
    return code


def _weights_to_shares(
    orders: list[Order],
    weighted: np.ndarray,
    buy: np.ndarray,
    held: np.ndarray,
    prev_close: np.ndarray,
    ctx: ExecutionContext,
    qty: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Set `qty` of the `weighted` orders to the change to their target at T-1's close,
    in whole lots; returns the masks (refused, refused for want of a previous close). A
    refused weight order (no previous close, or nothing to trade) keeps a quantity of 0."""
    n = len(orders)
    unsized, unpriced = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if not weighted.size:
        return unsized, unpriced
    lot, pc = ctx.rules.lot_size, prev_close[weighted]
    priced = pc > 0
    unpriced[weighted[~priced]] = True
    rows = weighted[priced]
    w = np.array([orders[k].target_weight for k in rows.tolist()], dtype=np.float64)
    target = np.floor(w * ctx.nav_prev / pc[priced] / lot).astype(np.int64) * lot
    change = np.where(buy[rows], target - held[rows], held[rows] - target)
    qty[rows] = np.maximum(change, 0)
    unsized[rows[change <= 0]] = True
    return unsized | unpriced, unpriced


def _message(order: Order, k: int, code: int, qty: int | None, f: _Facts) -> str:
    """The sequential broker's message for refusal `code` of order `k`."""
    side, reason = order.side, _CODES[code]
    if reason is RejectCode.NOT_IN_UNIVERSE:
        listed = side == "SELL" or f.member[k]
        return "no market data" if listed else "not in today's universe"
    if reason is RejectCode.NO_POSITION:
        return "no position to sell"
    if reason in _TRADABILITY:
        return f"cannot {side} today: {reason.value}"
    if reason is RejectCode.LOT_SIZE:
        if side == "BUY":
            return f"BUY {qty} is not a multiple of {f.lot} shares"
        return f"SELL {qty} is neither a multiple of {f.lot} nor the whole position"
    if reason is RejectCode.T1_LOCKED:
        return f"only {int(f.available[k])} of {int(f.held[k])} shares are sellable today (T+1)"
    if order.shares is None and qty == 0:  # a weight order that converts to nothing
        if f.unpriced[k]:
            return "no previous close"
        word = "above" if side == "BUY" else "below"
        return (
            f"target_weight {order.target_weight:g} is not "
            f"{word} the current weight; nothing to {side}"
        )
    return f"SELL {qty} exceeds the {int(f.held[k])} held"


def _fill_price(open_: np.ndarray, buy: np.ndarray, rules: MarketRules) -> np.ndarray:
    """`rules.fill_price` of every order."""
    if rules.half_spread_bps == 0:
        return open_
    h = rules.half_spread_bps / 1e4
    return np.where(buy, open_ * (1 + h), open_ * (1 - h))


def _affordable(cash: np.ndarray, price: np.ndarray, rules: MarketRules) -> np.ndarray:
    """`single._affordable_lots` of each (cash, price) pair (prices are positive)."""
    lot_value = price * rules.lot_size
    lots = np.trunc(cash / (lot_value * (1 + rules.buy_cost_bps / 1e4)))
    while True:
        value = lots * lot_value
        cost = np.where(value > 0, np.maximum(rules.min_cost, value * rules.buy_cost_bps / 1e4), 0)
        over = (lots > 0) & (value + cost > cash)
        if not over.any():
            return lots
        lots = lots - over


def fill(orders: list[Order], j: Judged, account: Account, rules: MarketRules) -> list[OrderRecord]:
    """Book the orders that passed the checks, in order, with the cash walked exactly."""
    records: list[OrderRecord | None] = [None] * len(orders)
    for k, message in j.messages.items():
        records[k] = _reject(orders[k], _CODES[j.code[k]], message, j.requested[k])
    todo = np.flatnonzero(j.code == _NONE)
    buy = np.array([orders[k].side == "BUY" for k in todo.tolist()], dtype=bool)
    qty, price, cost = j.qty[todo], j.price[todo], j.cost[todo]
    value = qty * price
    change = np.where(buy, -(value + cost), value - cost)
    start = 0
    while start < todo.size:
        rest = slice(start, None)
        cash = np.add.accumulate(np.concatenate(([account.cash], change[rest])))[:-1]
        short = buy[rest] & (_affordable(cash, price[rest], rules) * rules.lot_size < qty[rest])
        stop = start + int(np.argmax(short)) if short.any() else todo.size
        part = slice(start, stop)
        _book(orders, todo[part], qty[part], price[part], cost[part], account, rules, records)
        if stop < todo.size:  # the first BUY the cash cannot fill in full
            k = int(todo[stop])
            records[k] = _buy(orders[k], account, int(qty[stop]), float(price[stop]), rules)
        start = stop + 1
    return records  # type: ignore[return-value]


def _book(
    orders: list[Order],
    rows: np.ndarray,
    qty: np.ndarray,
    price: np.ndarray,
    cost: np.ndarray,
    account: Account,
    rules: MarketRules,
    records: list[OrderRecord | None],
) -> None:
    """Full fills, booked one by one (the cash sequence the forecast assumed)."""
    for k, n, p, c in zip(rows.tolist(), qty.tolist(), price.tolist(), cost.tolist(), strict=True):
        order = orders[k]
        if order.side == "BUY":
            account.record_buy(order.stock_id, n, p, c, rules.t_plus_one)
        else:
            account.record_sell(order.stock_id, n, p, c)
        records[k] = filled_record(order, n, p, c)
