"""Frozen engine output: the step, order and position tables of three real-data runs.

The golden Parquet files under `tests/market/golden/` were written by the sequential
per-order engine before its hot paths were vectorised; any change to sizing, execution,
distributions, marking or the table builders that alters one bit of these tables fails
here. The runs, on the real CSI300 members (2023-2024 import of `cn_dataset_dir`):

- `equal_weight`: the daily equal-weight job (`EqualWeightAgent(every=1)`) over
  2024-09-23 .. 2024-10-18 (the September rally and the October limit days: LIMIT_UP,
  LIMIT_DOWN and ONE_SIDED refusals, cash dividends), and `equal_weight_june`, the same
  job over 2024-06-03 .. 2024-06-14 (share distributions leave odd holdings, then odd-lot
  sells and buys are refused).
- `scramble`: a seeded agent that sends every kind of order the broker must judge
  (repeated symbols in one step, buys then sells of the same name under T+1, sells beyond
  the position, odd lots, weights, unknown symbols, non-members, buys larger than the cash
  left) over 2024-05-06 .. 2024-07-31, the ex-dividend season (cash and share
  distributions, suspensions, partial fills).

Regenerate only for an intended change of results, and say why in the change:
`python tests/market/test_engine_golden.py --write` (needs the shared data).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.agents.baselines import EqualWeightAgent
from tradebench.agents.protocol import Agent, Decision, StepInfo
from tradebench.data import Dataset, load_dataset
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action, Order
from tradebench.runs.broker.engine import BacktestResult, run_backtest_sync
from tradebench.view import MarketView

GOLDEN = Path(__file__).parent / "golden"
TABLES = ("steps", "orders", "positions")


@dataclass
class ScrambleAgent:
    """Seeded orders of every shape, aimed at the day's members and holdings."""

    seed: int
    name: str = "scramble"

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    async def decide(
        self, view: MarketView, account: AccountSnapshot, step: StepInfo | None = None
    ) -> Decision:
        """Up to 29 orders, then up to two more on names already ordered that day."""
        rng = self.rng
        members = view.members().tolist()
        outsiders = [str(s) for s in view.symbols[~view.member_mask()][:5]]
        halted = [str(s) for s in view.symbols[view.member_mask() & view.last("suspended")]]
        held = [p.symbol for p in account.positions]
        orders: list[Order] = []
        for _ in range(int(rng.integers(0, 30))):
            roll = rng.random()
            if held and roll < 0.35:
                symbol, side = str(rng.choice(held)), "SELL"
            elif halted and roll < 0.4:
                symbol, side = str(rng.choice(halted)), "BUY"
            elif roll < 0.92:
                symbol, side = str(rng.choice(members)), "BUY"
            else:
                symbol = str(rng.choice([*outsiders, "SZ999999"]))
                side = "BUY" if rng.random() < 0.7 else "SELL"
            if rng.random() < 0.3:
                weight = float(rng.choice([0.0, 0.002, 0.01, 0.03, 0.08, 0.3]))
                orders.append(Order(stock_id=symbol, side=side, target_weight=weight))
                continue
            sizes, odds = [100, 300, 1_000, 150, 2_500, 20_000], [3, 3, 3, 1, 2, 1]
            shares = int(rng.choice(sizes, p=np.array(odds) / sum(odds)))
            orders.append(Order(stock_id=symbol, side=side, shares=shares))
        for _ in range(int(rng.integers(0, 3)) if orders else 0):  # a name again, either side
            again = orders[int(rng.integers(0, len(orders)))]
            side = "SELL" if rng.random() < 0.6 else "BUY"
            orders.append(Order(stock_id=again.stock_id, side=side, shares=100))
        return Decision(action=Action(orders=orders, overall_reason="scramble"))


RUNS: dict[str, tuple[str, str]] = {
    "equal_weight": ("2024-09-23", "2024-10-18"),
    "equal_weight_june": ("2024-06-03", "2024-06-14"),
    "scramble": ("2024-05-06", "2024-07-31"),
}


def _agent(name: str) -> Agent:
    return ScrambleAgent(seed=21) if name == "scramble" else EqualWeightAgent(every=1)


def run_golden_job(ds: Dataset, name: str) -> BacktestResult:
    """One of the frozen runs with the engine as it is now."""
    start, end = RUNS[name]
    return run_backtest_sync(ds, _agent(name), start, end)


def _round_trip(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    frame.to_parquet(path, index=False)
    return pd.read_parquet(path)


@pytest.fixture(scope="module")
def cn(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_engine_reproduces_the_frozen_tables(cn: Dataset, name: str, tmp_path: Path) -> None:
    result = run_golden_job(cn, name)
    for table in TABLES:
        golden = pd.read_parquet(GOLDEN / f"{name}.{table}.parquet")
        fresh = _round_trip(getattr(result, table), tmp_path / f"{table}.parquet")
        pd.testing.assert_frame_equal(fresh, golden, check_exact=True, obj=f"{name} {table}")


def test_golden_runs_cover_the_rules() -> None:
    """The frozen tables exercise every refusal, partial fills and both distributions."""
    orders = pd.concat(pd.read_parquet(GOLDEN / f"{n}.orders.parquet") for n in RUNS)
    codes = set(orders["reject_code"].dropna())
    assert codes >= {
        "NOT_IN_UNIVERSE", "NO_POSITION", "T1_LOCKED", "LIMIT_UP", "LIMIT_DOWN",
        "ONE_SIDED", "SUSPENDED", "INSUFFICIENT_CASH", "LOT_SIZE", "INVALID_ORDER",
    }  # fmt: skip
    assert (orders["status"] == "partial").any()
    steps = pd.read_parquet(GOLDEN / "scramble.steps.parquet")
    assert (steps["distributions"] > 0).any()
    positions = pd.read_parquet(GOLDEN / "equal_weight_june.positions.parquet")
    assert (positions["shares"] % 100 != 0).any()  # share distributions leave odd holdings


def _write(dataset_dir: Path) -> None:
    ds = load_dataset(dataset_dir)
    GOLDEN.mkdir(exist_ok=True)
    for name in RUNS:
        result = run_golden_job(ds, name)
        for table in TABLES:
            getattr(result, table).to_parquet(GOLDEN / f"{name}.{table}.parquet", index=False)
            print(name, table, len(getattr(result, table)))


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from conftest import shared_data_dir

    from tradebench.data.importers.long import LongImport, import_long

    data = shared_data_dir()
    if data is None:
        sys.exit("real market data not found (set TRADEBENCH_SHARED_DATA)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "csi300"
        import_long(  # the same import as the `cn_dataset_dir` fixture
            LongImport(
                source=data / "cn" / "csi300_members_daily_2018_2026.parquet",
                out=out,
                market="cn",
                index_file=data / "cn" / "csi300_index_daily.csv",
                index_symbol="SH000300",
                membership_file=data / "universe" / "csi300_membership.csv",
                start="2023-01-01",
                end="2024-12-31",
            )
        )
        _write(out)
