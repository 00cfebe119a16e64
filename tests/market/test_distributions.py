"""Dividends and share distributions on ex-dates keep the holder whole."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tradebench.agents.protocol import Decision
from tradebench.data import load_dataset
from tradebench.market.distributions import distribute
from tradebench.market.ledger import Account
from tradebench.market.orders import Action, Order
from tradebench.runs.broker.engine import run_backtest_sync

COLUMN = {"A": 0, "B": 1, "C": 2}


def _account(**shares: int) -> Account:
    acct = Account(0.0)
    for symbol, n in shares.items():
        acct.record_buy(symbol, n, 0.0, 0.0, t_plus_one=False)
    acct.cash = 0.0
    return acct


def test_cash_dividend_share_distribution_and_glitch() -> None:
    acct = _account(A=1000, B=1050, C=500)
    prev = np.array([20.0, 13.0, 10.0])
    before = np.array([1.0, 1.0, 2.0])
    after = np.array([1.02, 1.3, 1.5])  # A: 2% cash dividend; B: 3-for-10 bonus; C: glitch
    paid = distribute(acct, before, after, prev, COLUMN)
    assert [(d.symbol, d.kind) for d in paid] == [("A", "cash"), ("B", "shares")]
    assert paid[0].cash == pytest.approx(1000 * 20.0 * (1 - 1 / 1.02))
    assert acct.shares("B") == 1050 + 315 and acct.available("B") == 1365
    assert paid[1].cash == pytest.approx(0.0, abs=1e-9)  # a whole number of new shares
    assert acct.shares("C") == 500
    assert acct.cash == pytest.approx(paid[0].cash + paid[1].cash)


def test_fractional_entitlement_is_paid_in_cash() -> None:
    acct = _account(A=1001)
    [d] = distribute(
        acct, np.array([1.0, 1, 1]), np.array([1.5, 1, 1]), np.array([9.0, 1, 1]), COLUMN
    )
    assert d.shares == 500  # floor(1001 * 0.5)
    assert d.cash == pytest.approx(0.5 * 9.0 / 1.5)  # half a share at the ex price
    assert d.value == pytest.approx(1001 * 9.0 * (1 - 1 / 1.5))


@dataclass
class BuyOnce:
    symbol: str
    name: str = "buy_once"

    async def decide(self, view, account, step) -> Decision:
        if step.index > 1:
            return Decision(action=Action())
        return Decision(action=Action(orders=[Order(stock_id=self.symbol, side="BUY", shares=100)]))


def test_holder_keeps_moutai_dividend(cn_dataset_dir: Path) -> None:
    """Moutai went ex-dividend on 2023-06-30: NAV follows the adjusted return that day."""
    ds = load_dataset(cn_dataset_dir)
    result = run_backtest_sync(ds, BuyOnce("SH600519"), "2023-06-20", "2023-07-10")
    steps = result.steps.set_index("date")
    ex = steps.loc["2023-06-30"]
    assert ex["distributions"] == pytest.approx(100 * 1713.71 * (1 - 6.785630 / 6.889798), rel=1e-5)
    prev = steps.iloc[steps.index.get_loc("2023-06-30") - 1]
    pnl = ex["nav"] - prev["nav"]
    adj = ds.panel.adjusted["adj_close"][:, ds.panel.column("SH600519")]
    t = int(np.searchsorted(ds.panel.dates, np.datetime64("2023-06-30")))
    expected = 100 * 1713.71 * (adj[t] / adj[t - 1] - 1)
    assert pnl == pytest.approx(expected, rel=0.02)  # vs -2,271 without the dividend
    assert pnl - ex["distributions"] == pytest.approx(100 * (1691.0 - 1713.71), abs=0.01)
