"""The broker's array path against its per-order path, on real quotes.

`market.batch` judges a step's orders on distinct symbols as arrays and walks only the
cash in order; the oracle is `single.execute_one`, the per-order broker, run on a copy
of the same account. Order lists are seeded and random over every shape the broker
judges (lots and odd lots, weights including 0 and above the current weight, sizes the
cash cannot pay, unknown symbols, non-members, sells of flat names, T+1-locked buys)
on real CSI300 days with limit moves, suspensions and ex-dates, under A-share rules,
A-share rules with a half-spread, and US rules. Records and the account after the step
must be equal exactly (`==` on floats, no tolerance).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tradebench.data import Dataset, load_dataset
from tradebench.market.batch import execute_batch
from tradebench.market.broker import BATCH_MIN_ORDERS, ExecutionContext, Universe, execute_orders
from tradebench.market.ledger import Account
from tradebench.market.orders import Order, RejectCode
from tradebench.market.rules import MarketRules
from tradebench.market.single import execute_one
from tradebench.runs.broker.engine import _filled_close, day_quotes
from tradebench.view import MarketView

DAYS = ("2024-01-31", "2024-06-07", "2024-09-30", "2024-10-08", "2024-10-11")
"""Limit-down opens, an ex-date cluster, the rally's limit-up days, its reversal."""
RULES = {
    "cn": MarketRules.cn(),
    "cn_spread": MarketRules(half_spread_bps=5.0),
    "us": MarketRules.us(),
}


@pytest.fixture(scope="module")
def cn(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


def _clone(account: Account) -> Account:
    copy = Account(account.cash)
    copy.holdings = account.holdings
    return copy


def _state(account: Account) -> tuple[float, list[tuple[str, int, int]]]:
    return account.cash, [(s, h.shares, h.available) for s, h in account.holdings.items()]


def _scenario(ds: Dataset, day: str, seed: int, rules: MarketRules):
    """A real day's quotes, an account with old and same-day holdings, random orders."""
    panel = ds.panel
    t = int(np.searchsorted(panel.dates, np.datetime64(day)))
    quotes = day_quotes(panel, t, _filled_close(panel))
    view = MarketView(panel, panel.dates[t], market=ds.market)
    rng = np.random.default_rng(seed)
    members = view.members().tolist()
    outsiders = panel.symbols[~view.member_mask()].tolist()[:20]
    account = Account(float(rng.choice([3_000.0, 40_000.0, 400_000.0, 2_000_000.0])))
    for s in rng.choice(members, size=60, replace=False).tolist():
        shares = int(rng.choice([100, 150, 1_000, 2_300]))
        account.record_buy(s, shares, 0.0, 0.0, t_plus_one=False)
    for s in rng.choice(members, size=10, replace=False).tolist():  # bought today (T+1)
        account.record_buy(s, 200, 0.0, 0.0, t_plus_one=True)
    cols = np.array([panel.column_map[s] for s in members])
    floor = quotes.ref_close[cols] * (1 - quotes.threshold[cols])
    floored = np.array(members)[quotes.open[cols] <= floor * (1 + 1e-9)][:5].tolist()
    for s in floored:  # held names that open at their limit-down
        account.record_buy(s, 1_000, 0.0, 0.0, t_plus_one=False)
    held = list(account.holdings)
    pool = sorted({*rng.choice(members, 120).tolist(), *held, *outsiders, "SZ999999"})
    symbols = rng.permutation(pool)[: int(rng.integers(BATCH_MIN_ORDERS, len(pool)))]
    orders = [Order(stock_id=s, side="SELL", shares=1_000) for s in floored]
    for s in symbols.tolist():
        if s in floored:
            continue
        side = "SELL" if (s in held and rng.random() < 0.6) or rng.random() < 0.1 else "BUY"
        if rng.random() < 0.35:
            w = float(rng.choice([0.0, 0.001, 0.004, 0.02, 0.1, 0.6]))
            orders.append(Order(stock_id=s, side=side, target_weight=w))
        else:
            n = int(rng.choice([100, 200, 150, 1_000, 2_300, 5_000, 60_000]))
            orders.append(Order(stock_id=s, side=side, shares=n))
    universe = (
        frozenset(members) if rng.random() < 0.5 else Universe(view.member_mask(), panel.column_map)
    )
    nav = account.nav(quotes.prev_close, panel.column_map)
    return orders, account, quotes, ExecutionContext(rules, nav, universe)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    day=st.sampled_from(DAYS), seed=st.integers(0, 2**32 - 1), rules=st.sampled_from(sorted(RULES))
)
def test_array_path_writes_the_per_order_records(
    cn: Dataset, day: str, seed: int, rules: str
) -> None:
    orders, account, quotes, ctx = _scenario(cn, day, seed, RULES[rules])
    sequential = _clone(account)
    expected = [execute_one(o, sequential, quotes, ctx) for o in orders]
    got = execute_batch(orders, [o.stock_id for o in orders], account, quotes, ctx)
    assert got == expected
    assert _state(account) == _state(sequential)


def test_the_scenarios_reach_every_outcome(cn: Dataset) -> None:
    """The random scenarios are not vacuous: fills, partials and every refusal occur."""
    seen = set()
    for seed in range(30):
        orders, account, quotes, ctx = _scenario(cn, DAYS[seed % len(DAYS)], seed, RULES["cn"])
        for r in execute_orders(orders, account, quotes, ctx):
            seen.add((r.status, r.reject_code.value if r.reject_code else None))
    codes = {code for _, code in seen}
    assert {("filled", None), ("partial", "INSUFFICIENT_CASH")} <= seen
    assert codes >= {
        "NOT_IN_UNIVERSE", "NO_POSITION", "T1_LOCKED", "LIMIT_UP", "LIMIT_DOWN", "SUSPENDED",
        "INSUFFICIENT_CASH", "LOT_SIZE", "INVALID_ORDER",
    }  # fmt: skip


def test_a_repeated_symbol_takes_the_per_order_path(cn: Dataset) -> None:
    """A second order on a name sees the first one's fill (a same-day buy is T+1 locked)."""
    orders, account, quotes, ctx = _scenario(cn, DAYS[1], 7, RULES["cn"])
    name = next(s for s in sorted(ctx.universe) if s not in account.holdings)
    twice = [Order(stock_id=name, side="BUY", shares=100), *orders]
    twice.append(Order(stock_id=name, side="SELL", shares=100))
    sequential = _clone(account)
    expected = [execute_one(o, sequential, quotes, ctx) for o in twice]
    got = execute_orders(twice, account, quotes, ctx)
    assert got == expected and got[-1].reject_code == RejectCode.T1_LOCKED
    assert _state(account) == _state(sequential)


def test_the_cash_walk_is_exact_at_the_boundary(cn: Dataset) -> None:
    """Cash for exactly 30 of 60 one-lot buys, one cent short of the 31st: the array path
    must refuse that one and fill later cheaper ones exactly as the per-order path."""
    panel = cn.panel
    t = int(np.searchsorted(panel.dates, np.datetime64(DAYS[1])))
    quotes = day_quotes(panel, t, _filled_close(panel))
    view = MarketView(panel, panel.dates[t], market=cn.market)
    rules = RULES["cn"]
    members = [s for s in view.members().tolist() if quotes.open[panel.column_map[s]] > 0]
    orders = [Order(stock_id=s, side="BUY", shares=100) for s in members[:60]]
    prices = [float(quotes.open[panel.column_map[o.stock_id]]) for o in orders]
    need = [100 * p + rules.cost(100 * p, "BUY") for p in prices]
    account = Account(sum(need[:31]) - 0.01)
    ctx = ExecutionContext(rules, account.cash, frozenset(members))
    sequential = _clone(account)
    expected = [execute_one(o, sequential, quotes, ctx) for o in orders]
    assert [r.status for r in expected[:31]] == ["filled"] * 30 + ["rejected"]
    got = execute_batch(orders, [o.stock_id for o in orders], account, quotes, ctx)
    assert got == expected
    assert _state(account) == _state(sequential)
