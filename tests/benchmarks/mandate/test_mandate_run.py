"""The shipped example, baselines only, end to end through `tradebench run` on real data:
every pool size it lists, the analysts choosing the pool."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.mandate.conftest import EXAMPLE, example_spec
from tradebench.benchmarks.mandate.pool import draw_pool
from tradebench.cli import app
from tradebench.data.dataset import load_dataset

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

EVIDENCE = {"AMZN", "COIN", "MSFT", "NFLX", "TSLA"}


@pytest.fixture(scope="module")
def baseline_run(mandate_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example as shipped (every K and seed it lists), baselines only, through the CLI."""
    folder = tmp_path_factory.mktemp("mandate-run")
    spec_file = folder / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(example_spec(mandate_dataset)))
    result = CliRunner().invoke(app, ["run", str(spec_file), "-o", str(folder / "run")])
    assert result.exit_code == 0, result.output
    return folder / "run"


def _progress(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "progress.jsonl").read_text().splitlines()]


ARTEFACTS = ("cost_curve", "adherence", "pnl_by_name", "loo_spread", "spread_bootstrap")
ARTEFACTS += ("drift", "stress_blank_top")


def test_example_runs_every_cell(baseline_run: Path) -> None:
    spec = yaml.safe_load(EXAMPLE.read_text())
    sizes, seeds = spec["options"]["pool_sizes"], spec["seeds"]
    summary = pd.read_parquet(baseline_run / "summary.parquet")
    assert (summary["status"] == "done").all()
    constructors = summary[summary["cadence"].notna()]
    modes = sorted(f"{c}_k{k}" for c in spec["modes"] for k in sizes)
    assert sorted(constructors["mode"].unique()) == modes
    assert (
        len(constructors) == 2 * len(modes) * len(seeds) and len(summary) == len(constructors) + 2
    )
    assert (summary["n_steps"] == 44).all()  # 2025-06-02 .. 2025-08-04
    cash = summary.set_index("agent").loc["cash"]
    assert cash["total_return"] == 0.0
    for ep in constructors["episode_id"]:
        folder = baseline_run / "episodes" / ep
        for name in ARTEFACTS:
            assert (folder / f"{name}.parquet").exists(), (ep, name)
        record = json.loads((folder / "episode.json").read_text())
        assert record["mandate"]["constraints"]["max_weight"] == 0.25
        assert len(record["mandate"]["constraints_hash"]) == 64
        choice = json.loads((folder / "pool.json").read_text())
        assert record["pool"] == choice["names"] and choice["rule"] == "analysts"
        assert set(record["sectors"]) == set(record["pool"])
    assert constructors["citation_violations"].eq(0).all()
    assert (baseline_run / "mandate.json").exists()


def test_pool_is_seeded_point_in_time_with_evidence(mandate_dataset: Path) -> None:
    ds = load_dataset(mandate_dataset)
    five = draw_pool(ds, "2025-06-02", 5, 0)
    assert set(five) == EVIDENCE
    ten = draw_pool(ds, "2025-06-02", 10, 0)
    assert set(ten) >= EVIDENCE and ten == draw_pool(ds, "2025-06-02", 10, 0)
    assert ten != draw_pool(ds, "2025-06-02", 10, 1)
    # COIN joined the S&P 500 on 2025-05-19: not a member, so not drawn, before it
    assert "COIN" not in draw_pool(ds, "2025-05-01", 5, 0)


def test_index_buy_and_hold_trades_spy_through_the_broker(baseline_run: Path) -> None:
    folder = baseline_run / "episodes" / "spy_bh_20250602-20250804"
    orders = pd.read_parquet(folder / "orders.parquet")
    assert orders["symbol"].tolist() == ["SPY"] and orders["side"].tolist() == ["BUY"]
    assert orders["cost"].iloc[0] > 0


def test_captures_are_byte_identical_across_constructors(baseline_run: Path) -> None:
    episodes = baseline_run / "episodes"
    for k in (5, 10, 20):
        seen = {}
        for agent in ("ew", "score"):
            lines = _progress(episodes / f"{agent}_daily_k{k}_s0_20250602-20250804")
            seen[agent] = [line["mandate"]["capture_sha256"] for line in lines]
        assert seen["ew"] == seen["score"] and len(seen["ew"]) == 44
        record = json.loads(
            (episodes / f"ew_daily_k{k}_s0_20250602-20250804/episode.json").read_text()
        )
        files = sorted((baseline_run / record["captures"]).glob("*.json"))
        assert len(files) == 44
        assert [hashlib.sha256(f.read_bytes()).hexdigest() for f in files] == seen["ew"]
        once = _progress(episodes / f"score_once_k{k}_s0_20250602-20250804")
        assert once[0]["mandate"]["capture_sha256"] == seen["ew"][0]


def test_cost_curve_is_monotone_non_increasing(baseline_run: Path) -> None:
    for folder in (baseline_run / "episodes").iterdir():
        curve = pd.read_parquet(folder / "cost_curve.parquet")
        assert curve["cost_bps"].tolist() == [0.0, 5.0, 10.0, 20.0, 30.0, 50.0]
        returns = curve["total_return"].to_numpy()
        if folder.name.startswith("cash"):
            assert (returns == 0).all()
            continue
        assert (np.diff(returns) <= 0).all(), (folder.name, returns)
        assert (np.diff(curve["spread_paid"].to_numpy()) >= 0).all()


def test_adherence_and_robustness_tables(baseline_run: Path) -> None:
    folder = baseline_run / "episodes" / "ew_daily_k5_s0_20250602-20250804"
    adherence = pd.read_parquet(folder / "adherence.parquet")
    # 1/5 each breaks the 2% cash floor at every rebalance; the critic restores it (binding
    # unless a sector cap already leaves more cash)
    floor = adherence[adherence["constraint"] == "cash_floor"]
    assert floor["step"].nunique() == 44 and floor["violated"].all()
    assert (floor["projected"] >= 0.02 - 1e-9).all() and np.allclose(floor["proposed"], 0.0)
    by_name = pd.read_parquet(folder / "pnl_by_name.parquet")
    steps = pd.read_parquet(folder / "steps.parquet")
    assert by_name["pnl"].sum() == pytest.approx(steps["nav"].iloc[-1] - 1_000_000, abs=1e-4)
    loo = pd.read_parquet(folder / "loo_spread.parquet")
    pool = json.loads((folder / "episode.json").read_text())["pool"]
    assert pd.isna(loo["left_out"].iloc[0]) and sorted(loo["left_out"].iloc[1:]) == sorted(pool)
    boot = pd.read_parquet(folder / "spread_bootstrap.parquet").iloc[0]
    assert boot["lo"] <= boot["estimate"] <= boot["hi"] and boot["n_days"] == 44


def test_report_has_the_mandate_sections(baseline_run: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(baseline_run)])
    assert result.exit_code == 0, result.output
    page = (baseline_run / "report.html").read_text()
    for title in ("Equity curves", "Mandate: cost sensitivity", "Mandate: robustness"):
        assert title in page
    assert "Mandate: constraint adherence" in page and "survivorship" in page
    for title in (
        "Mandate: held-book drift",
        "Mandate: blank the top-attribution name",
        "Mandate: pools",
    ):
        assert title in page
    assert (
        "Mandate: compiled constraints" in page and "No more than 25% in any single name." in page
    )


def _held(folder: Path) -> pd.DataFrame:
    """Date x name weights held at each close, from the broker's own tables (the oracle)."""
    pos = pd.read_parquet(folder / "positions.parquet")
    nav = pd.read_parquet(folder / "steps.parquet").set_index("date")["nav"]
    value = (pos["shares"] * pos["close"]).groupby([pos["date"], pos["symbol"]]).sum()
    return value.unstack(fill_value=0.0).reindex(nav.index, fill_value=0.0).div(nav, axis=0)


def test_held_book_drift_matches_the_positions(baseline_run: Path, mandate_dataset: Path) -> None:
    """Once-then-hold drifts past the 25% name cap, the 40% sector cap or the 2% cash floor;
    the drift table says on which days, as the positions themselves do."""
    ds = load_dataset(mandate_dataset)
    sectors = dict(zip(ds.instruments["symbol"], ds.instruments["sector"], strict=True))
    seen_breach = False
    for name in ("score_once_k5", "ew_once_k5", "score_daily_k5"):
        folder = baseline_run / "episodes" / f"{name}_s0_20250602-20250804"
        w = _held(folder)
        tol = 0.005
        by_sector = w.T.groupby(lambda n: sectors.get(n) or f"unknown ({n})").sum().T
        broken = (w.max(axis=1) > 0.25 + tol) | (1 - w.sum(axis=1) < 0.02 - tol)
        broken |= by_sector.max(axis=1) > 0.40 + tol
        drift = pd.read_parquet(folder / "drift.parquet")
        assert drift["date"].tolist() == list(w.index)
        assert (drift["breaches"] > 0).tolist() == broken.tolist(), name
        assert (
            np.allclose(drift["largest"], w.max(axis=1)) and drift["projection_breaches"].max() == 0
        )
        seen_breach |= bool(broken.any())
        record = json.loads((folder / "episode.json").read_text())
        assert record["headline"]["drift_days"] == int(broken.sum())
    assert seen_breach  # the example's once-then-hold K=5 book does drift


def test_blank_top_name_stress(baseline_run: Path) -> None:
    folder = baseline_run / "episodes" / "score_daily_k5_s0_20250602-20250804"
    stress = pd.read_parquet(folder / "stress_blank_top.parquet").iloc[0]
    by_name = pd.read_parquet(folder / "pnl_by_name.parquet")
    assert stress["name"] == by_name.sort_values("contribution").iloc[-1]["symbol"]
    orders = pd.read_parquet(folder / "orders.parquet")
    assert stress["name"] in set(orders["symbol"])
    steps = pd.read_parquet(folder / "steps.parquet")
    assert stress["total_return"] == pytest.approx(steps["nav"].iloc[-1] / 1e6 - 1)
    # without the best contributor the episode earns less than with it
    assert stress["blanked_return"] < stress["total_return"]
