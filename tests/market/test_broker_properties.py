"""Property tests: random order streams on real data keep the ledger's invariants."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tradebench.agents.protocol import Decision
from tradebench.data import Dataset, load_dataset
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action, Order
from tradebench.runs.broker.engine import run_backtest_sync
from tradebench.view import MarketView


@dataclass
class RandomAgent:
    """Sends seeded random orders: members, holdings and junk; shares and weights."""

    seed: int
    name: str = "random"

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    async def decide(self, view: MarketView, account: AccountSnapshot, step=None) -> Decision:
        rng = self.rng
        members = view.members()
        held = [p.symbol for p in account.positions]
        orders = []
        for _ in range(int(rng.integers(0, 12))):
            pool = held if held and rng.random() < 0.5 else [*members[:60].tolist(), "SZ999999"]
            symbol = str(rng.choice(pool))
            side = "SELL" if rng.random() < 0.4 else "BUY"
            if rng.random() < 0.5:
                size = {"shares": int(rng.choice([100, 200, 500, 1000, 150, 3000, 50_000]))}
            else:
                size = {"target_weight": float(rng.choice([0.0, 0.01, 0.05, 0.2]))}
            orders.append(Order(stock_id=symbol, side=side, **size))
        return Decision(action=Action(orders=orders))


@pytest.fixture(scope="module")
def cn(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    start=st.sampled_from(["2023-03-01", "2023-09-01", "2024-02-01", "2024-06-03"]),
)
def test_random_order_streams_keep_invariants(cn: Dataset, seed: int, start: str) -> None:
    end = str((pd.Timestamp(start) + pd.Timedelta(days=21)).date())
    result = run_backtest_sync(cn, RandomAgent(seed), start, end)
    steps, pos, orders = result.steps, result.positions, result.orders
    assert (steps["cash"] >= -1e-9).all()
    # NAV identity: cash + sum(shares x close) on every day
    value = (pos["shares"] * pos["close"]).groupby(pos["date"]).sum()
    held_value = steps["date"].map(value).fillna(0.0)
    np.testing.assert_allclose(steps["nav"], steps["cash"] + held_value, rtol=1e-12, atol=1e-6)
    filled = orders[orders["filled_shares"] > 0]
    buys = filled[filled["side"] == "BUY"]
    assert (buys["filled_shares"] % 100 == 0).all()
    # no sell of shares bought the same day: sold <= held at the previous close
    prev = pos.assign(
        date=pos["date"].map(dict(zip(steps["date"], steps["date"].shift(-1), strict=True)))
    )
    prev_held = prev.set_index(["date", "symbol"])["shares"]
    sold = filled[filled["side"] == "SELL"].groupby(["date", "symbol"])["filled_shares"].sum()
    for key, qty in sold.items():
        assert qty <= prev_held.get(key, 0)
    # every refusal carries a code; a partial fill too
    assert orders.loc[orders["status"] != "filled", "reject_code"].notna().all()
