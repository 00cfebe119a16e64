"""A submission's orders against the account: what the order list as a whole may not ask.

Each order alone can be legal while the list is not: three BUYs at `target_weight` 1.0
ask for 300% of NAV, two orders name one stock, a SELL asks for more shares than are held.
`account_problems` finds these after the per-order checks, on the account at T-1's close
(the state `target_weight` is defined against), and codes each one like the other
refusals (`orders/<i>: [CODE] text`). The texts are built from the rule and the account,
never from what the model wrote (no identifier, no date).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np

from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.market.orders import Order

SUM_TOL = 1e-6
"""How far past 100% of NAV a list's weights may add up (float rounding of e.g. 10 x 0.1)."""


class AccountCode(StrEnum):
    """Why the order list as a whole was refused."""

    DUPLICATE_NAME = "DUPLICATE_NAME"
    """A second order names a stock an earlier order of the list already names."""
    OVER_HELD = "OVER_HELD"
    """A SELL of more shares than the account holds."""
    OVER_INVESTED = "OVER_INVESTED"
    """Holdings kept plus what the orders buy exceed 100% of NAV."""


AccountProblem = tuple[int, AccountCode, str]
"""(order index, code, text)."""


def account_problems(orders: Sequence[Order], ctx: StepContext) -> list[AccountProblem]:
    """The list-level refusals of `orders` (real symbols, each valid alone) on `ctx.account`.

    Weights after the orders, at T-1's close: a weight order moves its stock to its target
    (a BUY never below, a SELL never above the current weight, as the broker trades);
    a shares order moves it by shares x close / NAV. A list whose weights end above 100%
    (+ `SUM_TOL`) is refused at the first order that took them past it.
    """
    account = ctx.account
    held = dict(zip(account.symbols, account.shares.tolist(), strict=True))
    weight = dict(zip(account.symbols, account.weight.tolist(), strict=True))
    problems: list[AccountProblem] = []
    seen: set[str] = set()
    total, first_over = float(sum(weight.values())), None
    for i, order in enumerate(orders):
        symbol = order.stock_id
        if symbol in seen:
            text = "an earlier order already names this stock; give one order per stock"
            problems.append((i, AccountCode.DUPLICATE_NAME, text))
            continue
        seen.add(symbol)
        if order.side == "SELL" and order.shares is not None and order.shares > held.get(symbol, 0):
            # no count in the text: under rebased prices the real share count is hidden
            text = "sells more than the holding; sell at most what is held"
            problems.append((i, AccountCode.OVER_HELD, text))
            continue
        now = weight.get(symbol, 0.0)
        after = _weight_after(order, now, _close(ctx, symbol), account.nav)
        weight[symbol], total = after, total + after - now
        if total > 1.0 + SUM_TOL and first_over is None:
            first_over = i
    if first_over is not None and total > 1.0 + SUM_TOL:
        text = (
            f"the orders and the holdings they keep add up to {total:.0%} of NAV, the first "
            "past 100% being this one; keep target weights and kept holdings at most 100%"
        )
        problems.append((first_over, AccountCode.OVER_INVESTED, text))
    return sorted(problems, key=lambda p: p[0])


def _close(ctx: StepContext, symbol: str) -> float:
    """T-1's raw close of `symbol` (NaN when the view has none)."""
    col = ctx.view.column_map.get(symbol)
    return float(ctx.view.last("close")[col]) if col is not None else float("nan")


def _weight_after(order: Order, now: float, close: float, nav: float) -> float:
    """The stock's weight of NAV once `order` trades in full, priced at `close`."""
    if order.target_weight is not None:
        return (
            max(now, order.target_weight) if order.side == "BUY" else min(now, order.target_weight)
        )
    if not np.isfinite(close) or nav <= 0:  # unpriced: the broker refuses it, no change
        return now
    step = float(order.shares or 0) * close / nav
    return now + step if order.side == "BUY" else max(now - step, 0.0)
