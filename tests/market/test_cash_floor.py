"""Cash never goes negative: a buy is sized against cash including the CNY 5 minimum cost.

Under `MarketRules.cn()` one 100-share lot at 10.00 costs 1,000.00 plus max(5, 0.05% of
1,000) = 5.00, i.e. 1,005.00 in all (the oracle, worked by hand here). An account with
1,004.00 cannot buy it (the proportional cost alone, 0.50, would let it through and leave
cash at -1.00); one with 1,005.00 can and ends at exactly 0. Checked through the broker on
a hand-built quote and through the engine on a real bar that opened at 10.00.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tradebench.agents.protocol import Decision, StepInfo
from tradebench.data import load_dataset
from tradebench.market.broker import DayQuotes, ExecutionContext, execute_orders
from tradebench.market.ledger import Account, AccountSnapshot
from tradebench.market.orders import Action, Order, RejectCode
from tradebench.market.rules import MarketRules
from tradebench.runs.broker.engine import run_backtest_sync
from tradebench.view import MarketView

SYMBOL = "SH600000"
LOT_AT_TEN = 1_000.00 + 5.00
"""One lot at 10.00 plus the CNY 5 minimum cost."""


def _quotes_at_ten() -> DayQuotes:
    """One main-board name opening flat at 10.00 on a previous close of 10.00."""
    one = np.array([10.0])
    return DayQuotes(
        open=one,
        high=one * 1.02,
        low=one * 0.98,
        close=one,
        prev_close=one,
        ref_close=one,
        suspended=np.array([False]),
        threshold=np.array([0.095]),
        column={SYMBOL: 0},
    )


def _buy(cash: float, order: Order) -> tuple[Account, str, RejectCode | None, int]:
    """Execute one order on a fresh account with `cash`; (account, status, code, shares)."""
    account = Account(cash)
    ctx = ExecutionContext(MarketRules.cn(initial_cash=cash), cash, frozenset({SYMBOL}))
    [record] = execute_orders([order], account, _quotes_at_ten(), ctx)
    return account, record.status, record.reject_code, record.filled_shares


@pytest.mark.parametrize(
    "order",
    [
        Order(stock_id=SYMBOL, side="BUY", shares=100),
        Order(stock_id=SYMBOL, side="BUY", target_weight=1.0),  # 1,004 / 10.00 -> one lot
    ],
    ids=["shares", "target_weight"],
)
def test_one_lot_needs_the_minimum_cost_in_cash(order: Order) -> None:
    account, status, code, filled = _buy(LOT_AT_TEN - 1.0, order)
    assert (status, code, filled) == ("rejected", RejectCode.INSUFFICIENT_CASH, 0)
    assert account.cash == LOT_AT_TEN - 1.0 and account.holdings == {}
    account, status, code, filled = _buy(LOT_AT_TEN, order)
    assert (status, code, filled) == ("filled", None, 100)
    assert account.cash == pytest.approx(0.0, abs=1e-9) and account.cash >= 0


def test_a_cut_buy_keeps_the_minimum_cost_in_cash() -> None:
    """2,004.00 asks for two lots (2,005.00 with cost): it gets one, leaving 999.00."""
    order = Order(stock_id=SYMBOL, side="BUY", shares=200)
    account, status, code, filled = _buy(2 * LOT_AT_TEN - 6.0, order)
    assert (status, code, filled) == ("partial", RejectCode.INSUFFICIENT_CASH, 100)
    assert account.cash == pytest.approx(2 * LOT_AT_TEN - 6.0 - LOT_AT_TEN)


@dataclass
class BuyOneLot:
    """Buys 100 shares of `symbol` on the first step and nothing after."""

    symbol: str
    name: str = "buy_one_lot"

    async def decide(self, view: MarketView, account: AccountSnapshot, step: StepInfo) -> Decision:
        if step.index > 1:
            return Decision(action=Action())
        return Decision(action=Action(orders=[Order(stock_id=self.symbol, side="BUY", shares=100)]))


def test_a_small_real_account_never_goes_below_zero(cn_dataset_dir: Path) -> None:
    """Gemdale (SH600383) opened at 10.00 on 2023-01-04 (previous close 10.00): a 1,004.00
    account is refused and keeps its cash; a 1,005.00 account fills and ends at 0."""
    ds = load_dataset(cn_dataset_dir)
    t = int(np.searchsorted(ds.panel.dates, np.datetime64("2023-01-04")))
    assert ds.panel.fields["open"][t, ds.panel.column("SH600383")] == 10.0
    for cash, status in ((LOT_AT_TEN - 1.0, "rejected"), (LOT_AT_TEN, "filled")):
        result = run_backtest_sync(
            ds, BuyOneLot("SH600383"), "2023-01-04", "2023-01-06", MarketRules.cn(cash)
        )
        [order] = result.orders.itertuples()
        assert order.status == status
        assert (result.steps["cash"] >= 0).all()
        expected = cash if status == "rejected" else 0.0
        assert result.steps["cash"].iloc[0] == pytest.approx(expected, abs=1e-9)
