"""The mandate benchmark trades through the broker engine's one day loop: on real CSI300
bars over the 2024 dividend season, a held name's ex-date credits its distribution, and
every filled order gets its outcome, both checked against the source file itself."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tradebench.cli import app

EPISODE = "ew_once_k10_s0_20240603-20240731"
MANDATE = "Long only. No more than 25% in any single name. Keep at least 2% in cash."


@pytest.fixture(scope="module")
def cn_mandate_run(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The equal-weight constructor over a pool of ten CSI300 members, bought on
    2024-06-03 and held through July (cash dividends fall in these weeks), via the CLI."""
    folder = tmp_path_factory.mktemp("mandate-cn")
    spec = {
        "benchmark": "mandate",
        "dataset": str(cn_dataset_dir),
        "windows": [{"start": "2024-06-03", "end": "2024-07-31"}],
        "modes": ["once"],
        "seeds": [0],
        "agents": [{"name": "ew", "baseline": "equal_weight"}],
        "options": {
            "mandate": MANDATE,
            "pool_sizes": [10],
            "analysts": ["technical"],
            "cost_levels_bps": [0, 10],
            "bootstrap_samples": 200,
        },
    }
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["run", str(folder / "spec.yaml"), "-o", str(folder / "run")])
    assert result.exit_code == 0, result.output
    return folder / "run"


def _source(shared_data: Path, symbols: list[str]) -> pd.DataFrame:
    """The source bars of `symbols`: raw close (adjusted close / factor, on the exchange's
    0.01 yuan grid), factor, and the adjusted close, indexed by (date, symbol)."""
    bars = pd.read_parquet(
        shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
        columns=["date", "symbol", "close", "factor"],
        filters=[("symbol", "in", symbols)],
    )
    bars["date"] = pd.to_datetime(bars["date"])
    bars = bars[(bars["date"] >= "2024-05-01") & (bars["date"] <= "2024-08-31")]
    bars[["close", "factor"]] = bars[["close", "factor"]].astype("float64")
    bars["raw_close"] = (bars["close"] / bars["factor"]).round(2)
    return bars.set_index(["date", "symbol"]).sort_index()


def _expected_credits(steps: pd.DataFrame, positions: pd.DataFrame, src: pd.DataFrame) -> list:
    """Per day: what the holdings at the previous close receive on the day's ex-dates.

    A factor step r = factor(T) / factor(T-1) > 1 is a distribution worth shares x raw
    close(T-1) x (1 - 1/r); up to 10% it is paid in cash, above it in whole new shares
    (valued at T's raw close) plus the fraction in cash.
    """
    dates = list(steps["date"])
    out = [0.0]
    for prev, day in pairwise(dates):
        held = positions[positions["date"] == prev]
        total = 0.0
        for row in held.itertuples():
            before, now = src.loc[(prev, row.symbol)], src.loc[(day, row.symbol)]
            ratio = now["factor"] / before["factor"]
            if not ratio > 1 + 1e-9:
                continue
            value = row.shares * before["raw_close"] * (1 - 1 / ratio)
            if ratio - 1 <= 0.10:
                total += value
            else:
                new = int(np.floor(row.shares * (ratio - 1) + 1e-9))
                total += value - new * before["raw_close"] / ratio + new * now["raw_close"]
        out.append(total)
    return out


def test_held_ex_dates_credit_the_distribution(cn_mandate_run: Path, shared_data: Path) -> None:
    folder = cn_mandate_run / "episodes" / EPISODE
    steps = pd.read_parquet(folder / "steps.parquet")
    positions = pd.read_parquet(folder / "positions.parquet")
    pool = json.loads((folder / "pool.json").read_text())["names"]
    src = _source(shared_data, pool)
    expected = _expected_credits(steps, positions, src)
    assert sum(x > 0 for x in expected) >= 2  # the window holds ex-dates of held names
    assert steps["distributions"].tolist() == pytest.approx(expected, rel=1e-9, abs=1e-6)
    # the credit is cash: on an ex-date of cash dividends only, with no trade, the cash
    # grows by exactly the credit
    cash = steps["cash"].to_numpy()
    for k in range(1, len(steps)):
        if expected[k] > 0 and steps["n_orders"].iloc[k] == 0:
            assert cash[k] - cash[k - 1] == pytest.approx(expected[k], rel=1e-9)


def test_filled_orders_get_their_outcome(cn_mandate_run: Path, shared_data: Path) -> None:
    folder = cn_mandate_run / "episodes" / EPISODE
    orders = pd.read_parquet(folder / "orders.parquet")
    filled = orders[orders["filled_shares"] > 0]
    assert len(filled) >= 10
    src = _source(shared_data, sorted(set(filled["symbol"])))
    calendar = sorted(src.index.get_level_values("date").unique())
    for row in filled.itertuples():
        after = calendar[calendar.index(row.date) + 1]
        ret = src.loc[(after, row.symbol), "close"] / src.loc[(row.date, row.symbol), "close"] - 1
        right = ret > 0 if row.side == "BUY" else ret < 0
        assert row.outcome == float(right), (row.date, row.symbol, ret)
    assert orders.loc[orders["filled_shares"] == 0, "outcome"].isna().all()
