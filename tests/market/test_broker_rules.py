"""Broker rules on hand-built quotes: every rejection code, T+1, lots, costs, limits."""

from __future__ import annotations

import numpy as np
import pytest

from tradebench.data.boards import board_rule
from tradebench.market.broker import DayQuotes, ExecutionContext, execute_orders
from tradebench.market.ledger import Account
from tradebench.market.orders import Order, RejectCode
from tradebench.market.rules import MarketRules

SYMBOLS = ["SH600000", "SZ300001", "SH688001", "BJ830001", "SZ000002"]
COL = {s: i for i, s in enumerate(SYMBOLS)}
CN = MarketRules.cn()


def quotes(**overrides: dict[str, float]) -> DayQuotes:
    """Flat quotes at 10.00 (previous close 10.00) unless overridden per symbol."""
    n = len(SYMBOLS)
    base = {k: np.full(n, 10.0) for k in ("open", "high", "low", "close", "prev")}
    base["high"] = np.full(n, 10.3)
    base["low"] = np.full(n, 9.8)
    suspended = np.zeros(n, dtype=bool)
    for symbol, fields in overrides.items():
        for key, value in fields.items():
            if key == "suspended":
                suspended[COL[symbol]] = bool(value)
            else:
                base[key][COL[symbol]] = value
    threshold = np.array([board_rule(s).engine_threshold for s in SYMBOLS])
    return DayQuotes(
        open=base["open"],
        high=base["high"],
        low=base["low"],
        close=base["close"],
        prev_close=base["prev"],
        ref_close=base["prev"],
        suspended=suspended,
        threshold=threshold,
        column=COL,
    )


def ctx(nav: float = 1_000_000.0, rules: MarketRules = CN) -> ExecutionContext:
    return ExecutionContext(rules=rules, nav_prev=nav, universe=frozenset(SYMBOLS))


def buy(symbol: str = "SH600000", **kw) -> Order:
    return Order(stock_id=symbol, side="BUY", **({"shares": 1000} | kw))


def sell(symbol: str = "SH600000", **kw) -> Order:
    return Order(stock_id=symbol, side="SELL", **({"shares": 1000} | kw))


def held(symbol: str = "SH600000", shares: int = 1000, cash: float = 1_000_000.0) -> Account:
    acct = Account(cash)
    acct.record_buy(symbol, shares, 10.0, 5.0, t_plus_one=True)
    acct.cash = cash
    acct.unlock()
    return acct


def codes(records) -> list:
    return [r.reject_code for r in records]


def test_buy_fills_at_open_with_cost() -> None:
    acct = Account(1_000_000)
    [rec] = execute_orders([buy(shares=1000)], acct, quotes(SH600000={"open": 10.2}), ctx())
    assert rec.status == "filled" and rec.fill_price == 10.2 and rec.filled_shares == 1000
    assert rec.cost == pytest.approx(10200 * 5 / 1e4)  # 5.10 > CNY 5 minimum
    assert acct.cash == pytest.approx(1_000_000 - 10200 - 5.10)


def test_minimum_cost_applies() -> None:
    acct = Account(1_000_000)
    [rec] = execute_orders([buy(shares=100)], acct, quotes(), ctx())
    assert rec.cost == 5.0  # 1000 * 5 bps = 0.50 -> CNY 5 minimum
    acct2 = held()
    [rec2] = execute_orders([sell(shares=100)], acct2, quotes(), ctx())
    assert rec2.cost == 5.0  # 1000 * 15 bps = 1.50 -> minimum
    [rec3] = execute_orders([sell(shares=900)], acct2, quotes(), ctx())
    assert rec3.cost == pytest.approx(9000 * 15 / 1e4)


def test_not_in_universe() -> None:
    acct = Account(1_000_000)
    c = ExecutionContext(rules=CN, nav_prev=1e6, universe=frozenset({"SZ000002"}))
    assert codes(execute_orders([buy()], acct, quotes(), c)) == [RejectCode.NOT_IN_UNIVERSE]
    assert codes(execute_orders([buy("XX999999")], acct, quotes(), ctx())) == [
        RejectCode.NOT_IN_UNIVERSE
    ]


def test_sell_out_of_universe_holding_is_allowed() -> None:
    acct = held()
    c = ExecutionContext(rules=CN, nav_prev=1e6, universe=frozenset())
    [rec] = execute_orders([sell()], acct, quotes(), c)
    assert rec.status == "filled"


def test_no_position() -> None:
    assert codes(execute_orders([sell()], Account(1e6), quotes(), ctx())) == [
        RejectCode.NO_POSITION
    ]


def test_t_plus_one_locks_same_day_buys() -> None:
    acct = Account(1_000_000)
    recs = execute_orders([buy(shares=1000), sell(shares=1000)], acct, quotes(), ctx())
    assert codes(recs) == [None, RejectCode.T1_LOCKED]
    acct.unlock()  # next day
    [rec] = execute_orders([sell(shares=1000)], acct, quotes(), ctx())
    assert rec.status == "filled" and acct.shares("SH600000") == 0


def test_us_has_no_t_plus_one_and_single_share_lots() -> None:
    us = MarketRules.us(cost_bps=2.0)
    acct = Account(100_000)
    c = ctx(rules=us)
    recs = execute_orders([buy(shares=7), sell(shares=7)], acct, quotes(SH600000={"open": 15.0}), c)
    assert [r.status for r in recs] == ["filled", "filled"]
    assert recs[0].cost == pytest.approx(105 * 2 / 1e4)


def test_lot_size() -> None:
    acct = Account(1_000_000)
    assert codes(execute_orders([buy(shares=150)], acct, quotes(), ctx())) == [RejectCode.LOT_SIZE]
    acct = held(shares=1000)
    assert codes(execute_orders([sell(shares=150)], acct, quotes(), ctx())) == [RejectCode.LOT_SIZE]


def test_sell_may_close_odd_remainder() -> None:
    acct = held(shares=1050)
    [rec] = execute_orders([sell(shares=1050)], acct, quotes(), ctx())
    assert rec.status == "filled" and acct.shares("SH600000") == 0


@pytest.mark.parametrize(
    ("symbol", "threshold"),
    [
        ("SH600000", 0.095),
        ("SZ000002", 0.095),
        ("SZ300001", 0.195),
        ("SH688001", 0.195),
        ("BJ830001", 0.295),
    ],
)
def test_limit_thresholds_per_board(symbol: str, threshold: float) -> None:
    at_up = round(10.0 * (1 + threshold), 4)
    below_up = round(10.0 * (1 + threshold) - 0.01, 4)
    q_up = quotes(**{symbol: {"open": at_up, "high": at_up + 0.1, "low": at_up - 0.1}})
    assert codes(execute_orders([buy(symbol)], Account(1e6), q_up, ctx())) == [RejectCode.LIMIT_UP]
    q_ok = quotes(**{symbol: {"open": below_up, "high": below_up + 0.1, "low": below_up - 0.2}})
    assert codes(execute_orders([buy(symbol)], Account(1e6), q_ok, ctx())) == [None]
    # an open at the upper threshold does not stop a SELL
    assert codes(execute_orders([sell(symbol)], held(symbol), q_up, ctx())) == [None]
    at_down = round(10.0 * (1 - threshold), 4)
    q_down = quotes(**{symbol: {"open": at_down, "high": at_down + 0.1, "low": at_down - 0.1}})
    assert codes(execute_orders([sell(symbol)], held(symbol), q_down, ctx())) == [
        RejectCode.LIMIT_DOWN
    ]
    assert codes(execute_orders([buy(symbol)], Account(1e6), q_down, ctx())) == [None]


def test_one_sided_day_is_unfillable_both_ways() -> None:
    q = quotes(SH600000={"open": 11.0, "high": 11.0, "low": 11.0, "close": 11.0})
    assert codes(execute_orders([buy()], Account(1e6), q, ctx())) == [RejectCode.ONE_SIDED]
    assert codes(execute_orders([sell()], held(), q, ctx())) == [RejectCode.ONE_SIDED]
    down = quotes(SH600000={"open": 9.0, "high": 9.0, "low": 9.0, "close": 9.0})
    assert codes(execute_orders([sell()], held(), down, ctx())) == [RejectCode.ONE_SIDED]


def test_suspended() -> None:
    q = quotes(SH600000={"suspended": True})
    assert codes(execute_orders([buy()], Account(1e6), q, ctx())) == [RejectCode.SUSPENDED]
    assert codes(execute_orders([sell()], held(), q, ctx())) == [RejectCode.SUSPENDED]
    q_nan = quotes(SH600000={"open": float("nan")})
    assert codes(execute_orders([buy()], Account(1e6), q_nan, ctx())) == [RejectCode.SUSPENDED]


def test_cash_cut_down_is_a_logged_partial_fill() -> None:
    acct = Account(25_000)
    [rec] = execute_orders([buy(shares=5000)], acct, quotes(), ctx())
    # 2,400 shares = 24,000 + 12.0 cost fits; 2,500 = 25,000 + 12.5 does not
    assert rec.status == "partial" and rec.filled_shares == 2400
    assert rec.reject_code == RejectCode.INSUFFICIENT_CASH
    assert acct.cash == pytest.approx(25_000 - 24_000 - 12.0)
    assert acct.cash >= 0


def test_nothing_affordable_is_a_rejection() -> None:
    acct = Account(900)
    [rec] = execute_orders([buy(shares=100)], acct, quotes(), ctx())
    assert rec.reject_code == RejectCode.INSUFFICIENT_CASH and rec.status == "rejected"
    assert acct.cash == 900


def test_target_weight_converts_at_previous_close_in_whole_lots() -> None:
    acct = Account(1_000_000)
    q = quotes(SH600000={"open": 10.5, "prev": 10.0})
    [rec] = execute_orders([buy(shares=None, target_weight=0.0123)], acct, q, ctx())
    assert rec.requested_shares == 1200  # floor(12,300 / 10.00 / 100) lots
    assert rec.fill_price == 10.5
    acct.unlock()
    [rec2] = execute_orders([sell(shares=None, target_weight=0.005)], acct, q, ctx())
    assert rec2.filled_shares == 700  # 1,200 held -> 500 target
    [rec3] = execute_orders([sell(shares=None, target_weight=0.0)], acct, q, ctx())
    assert rec3.filled_shares == 500 and acct.shares("SH600000") == 0


def test_wrong_direction_weight_is_invalid() -> None:
    acct = held(shares=1000)
    [rec] = execute_orders([buy(shares=None, target_weight=0.001)], acct, quotes(), ctx())
    assert rec.reject_code == RejectCode.INVALID_ORDER


def test_sell_more_than_held_is_invalid() -> None:
    [rec] = execute_orders([sell(shares=2000)], held(shares=1000), quotes(), ctx())
    assert rec.reject_code == RejectCode.INVALID_ORDER


def test_orders_execute_in_sequence() -> None:
    acct = held(shares=1000, cash=0.0)
    # the BUY first finds no cash; after the SELL the same BUY fills
    recs = execute_orders(
        [buy(shares=500), sell(shares=1000), buy(shares=500)], acct, quotes(), ctx()
    )
    assert [r.status for r in recs] == ["rejected", "filled", "filled"]


def test_order_schema_requires_exactly_one_size() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Order(stock_id="SH600000", side="BUY")
    with pytest.raises(ValueError, match="exactly one"):
        Order(stock_id="SH600000", side="BUY", shares=100, target_weight=0.1)
