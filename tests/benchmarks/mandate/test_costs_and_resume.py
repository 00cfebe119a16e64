"""Side-aware prices on real bars, the cost curve's zero point, and resume after a kill."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.data.dataset import load_dataset
from tradebench.market.broker import ExecutionContext, execute_orders
from tradebench.market.ledger import Account
from tradebench.market.orders import Order
from tradebench.market.rules import MarketRules
from tradebench.runs.broker.engine import day_quotes

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

ARTEFACTS = ("cost_curve", "adherence", "pnl_by_name", "loo_spread", "spread_bootstrap")
TABLES = ("steps", "positions", "orders", "ew_reference", *ARTEFACTS)


def _small(dataset: Path, **options: object) -> dict:
    spec = example_spec(dataset, pool_sizes=[5], max_steps=8, **options)
    spec["agents"] = [{"name": "ew", "baseline": "equal_weight"}]
    spec["modes"] = ["daily"]
    return spec


def test_buy_pays_and_sell_receives_the_half_spread(mandate_dataset: Path) -> None:
    ds = load_dataset(mandate_dataset)
    panel = ds.panel
    t = int(np.searchsorted(panel.dates, np.datetime64("2025-06-03")))
    marks = panel.fields["close"]
    rules = MarketRules.us(cost_bps=1.0, initial_cash=100_000.0)
    rules = MarketRules(**{**rules.__dict__, "half_spread_bps": 10.0})
    account = Account(100_000.0)
    account.holdings = {}
    account.record_buy("MSFT", 50, 400.0, 0.0, t_plus_one=False)
    account.cash = 100_000.0
    orders = [
        Order(stock_id="MSFT", side="SELL", shares=20),
        Order(stock_id="NFLX", side="BUY", shares=10),
    ]
    ctx = ExecutionContext(rules=rules, nav_prev=120_000.0, universe=frozenset({"NFLX", "MSFT"}))
    sell, buy = execute_orders(orders, account, day_quotes(panel, t, marks), ctx)
    msft_open = float(panel.fields["open"][t, panel.column("MSFT")])
    nflx_open = float(panel.fields["open"][t, panel.column("NFLX")])
    assert sell.fill_price == pytest.approx(msft_open * 0.999, rel=1e-12)
    assert buy.fill_price == pytest.approx(nflx_open * 1.001, rel=1e-12)
    assert sell.fill_price < msft_open < msft_open * 1.001
    assert sell.cost == pytest.approx(20 * msft_open * 0.999 * 1e-4)
    assert buy.cost == pytest.approx(10 * nflx_open * 1.001 * 1e-4)
    expected = 100_000.0 + 20 * msft_open * 0.999 * (1 - 1e-4) - 10 * nflx_open * 1.001 * (1 + 1e-4)
    assert account.cash == pytest.approx(expected, rel=1e-12)


def test_episode_fills_are_side_aware(mandate_dataset: Path, tmp_path: Path) -> None:
    run(_small(mandate_dataset), tmp_path / "run")
    orders = pd.read_parquet(
        tmp_path / "run/episodes/ew_daily_k5_s0_20250602-20250804/orders.parquet"
    )
    panel = load_dataset(mandate_dataset).panel
    filled = orders[orders["filled_shares"] > 0]
    assert set(filled["side"]) == {"BUY", "SELL"}
    for row in filled.itertuples():
        t = int(np.searchsorted(panel.dates, np.datetime64(row.date.date())))
        opened = float(panel.fields["open"][t, panel.column(row.symbol)])
        sign = 1 if row.side == "BUY" else -1
        assert row.fill_price == pytest.approx(opened * (1 + sign * 5e-4), rel=1e-12)
        assert row.cost == pytest.approx(row.filled_shares * row.fill_price * 1e-4, rel=1e-9)


def test_zero_cost_point_equals_a_run_without_costs(mandate_dataset: Path, tmp_path: Path) -> None:
    costly = run(_small(mandate_dataset), tmp_path / "costly")
    free = run(_small(mandate_dataset, half_spread_bps=0, commission_bps=0), tmp_path / "free")
    ep = "episodes/ew_daily_k5_s0_20250602-20250804"
    curve = pd.read_parquet(tmp_path / "costly" / ep / "cost_curve.parquet")
    free_steps = pd.read_parquet(tmp_path / "free" / ep / "steps.parquet")
    costly_steps = pd.read_parquet(tmp_path / "costly" / ep / "steps.parquet")
    assert curve["total_return"].iloc[0] == free_steps["nav"].iloc[-1] / 1_000_000 - 1
    assert costly_steps["nav"].iloc[-1] < free_steps["nav"].iloc[-1]
    assert pd.read_parquet(costly).shape[0] == pd.read_parquet(free).shape[0]


def test_interrupted_episode_resumes_to_identical_files(
    mandate_dataset: Path, tmp_path: Path
) -> None:
    spec = _small(mandate_dataset)
    spec["agents"].append({"name": "score", "baseline": "score_weighted"})
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    run(spec, clean)
    run(spec, killed)
    # what a kill after day 3 leaves: three journal lines and a torn fourth, no tables
    for folder in (killed / "episodes").iterdir():
        lines = (folder / "progress.jsonl").read_text().splitlines()
        (folder / "progress.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:50])
        for name in TABLES:
            (folder / f"{name}.parquet").unlink()
        record = json.loads((folder / "episode.json").read_text())
        (folder / "episode.json").write_text(json.dumps({**record, "status": "running"}))
    (killed / "summary.parquet").unlink()
    (next((killed / "captures").iterdir()) / "2025-06-10.json").unlink()
    run(spec, killed)
    pd.testing.assert_frame_equal(
        pd.read_parquet(killed / "summary.parquet"), pd.read_parquet(clean / "summary.parquet")
    )
    for folder in (clean / "episodes").iterdir():
        other = killed / "episodes" / folder.name
        assert (other / "progress.jsonl").read_bytes() == (folder / "progress.jsonl").read_bytes()
        for name in TABLES:
            pd.testing.assert_frame_equal(
                pd.read_parquet(other / f"{name}.parquet"),
                pd.read_parquet(folder / f"{name}.parquet"),
            )
