"""Real data: the four components reconcile with the realised NAV of real baseline runs.

The reconciliation holds by construction (Trading is the NAV return minus the holdings
return), so the holdings return itself and the timing of the weights behind it are checked
against an oracle computed here: each name's weight at the previous close, from the
engine's positions.parquet, times the name's close-to-close return on the day, from the
shared source file's back-adjusted closes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.attribution.run import SUMMARY_FILE, attribute_run
from tradebench.data import load_dataset
from tradebench.metrics.attribution import COMPONENTS, pre_return_weights
from tradebench.metrics.factor_model import FactorModelConfig

CONFIG = FactorModelConfig(calibration_days=120)


@pytest.fixture(scope="module")
def attributed(real_run: Path, cn_dataset_dir: Path) -> Path:
    attribute_run(real_run, dataset=cn_dataset_dir, config=CONFIG)
    return real_run


def _episodes(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "episodes").iterdir())


def test_components_sum_to_nav_return_every_day(attributed: Path) -> None:
    for folder in _episodes(attributed):
        daily = pd.read_parquet(folder / "attribution.parquet")
        steps = pd.read_parquet(folder / "steps.parquet")
        assert daily.index.name == "date"
        assert len(daily) == len(steps) > 50
        nav = steps["nav"].to_numpy()
        realised = nav / np.concatenate([[1_000_000.0], nav[:-1]]) - 1
        np.testing.assert_allclose(daily["nav_return"].to_numpy(), realised, rtol=0, atol=1e-12)
        total = daily[list(COMPONENTS)].sum(axis=1).to_numpy()
        assert np.abs(total - realised).max() < 1e-10
        explained = daily[["common", "style", "selection"]].sum(axis=1)
        assert np.abs(explained - daily["holdings_return"]).max() < 1e-12


def _close_weights(folder: Path, dates: pd.DatetimeIndex) -> pd.DataFrame:
    """Each held name's weight at each episode day's close, from positions.parquet (0 flat)."""
    positions = pd.read_parquet(folder / "positions.parquet")
    weights = positions.pivot(index="date", columns="symbol", values="weight")
    weights.columns = weights.columns.astype(str)
    return weights.reindex(index=dates).fillna(0.0)


def _source_returns(shared_data: Path, dates: pd.DatetimeIndex, symbols: list[str]) -> np.ndarray:
    """Close-to-close returns of `symbols` on `dates` from the shared file's back-adjusted
    closes (raw = price / factor on the 0.01 tick, re-adjusted with the day's factor)."""
    frame = pd.read_parquet(
        shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
        columns=["date", "symbol", "close", "factor"],
    )
    frame = frame[
        (frame["date"] >= dates[0] - pd.Timedelta(days=30)) & (frame["date"] <= dates[-1])
    ]
    wide = {
        k: frame.pivot(index="date", columns="symbol", values=k).astype(np.float64)
        for k in ("close", "factor")
    }
    for table in wide.values():
        table.columns = table.columns.astype(str)
    adjusted = np.round(wide["close"] / wide["factor"], 2) * wide["factor"]
    returns = adjusted.pct_change(fill_method=None).reindex(index=dates, columns=symbols)
    assert not returns.isna().to_numpy().any()  # every held name has a bar on every day
    return returns.to_numpy()


def test_holdings_return_is_yesterdays_weights_times_todays_returns(
    attributed: Path, shared_data: Path
) -> None:
    """holdings_return[t] = sum_i w_i(close of t-1) x r_i,t, to 1e-12; with the weights
    of t's own close (a day late) the same sum misses on most days by more than 1e-4."""
    for folder in _episodes(attributed):
        daily = pd.read_parquet(folder / "attribution.parquet")
        dates = pd.DatetimeIndex(pd.to_datetime(pd.read_parquet(folder / "steps.parquet")["date"]))
        close_w = _close_weights(folder, dates)
        returns = _source_returns(shared_data, dates, list(close_w.columns))
        yesterday = close_w.shift(1).fillna(0.0).to_numpy()  # nothing held before day one
        expected = (yesterday * returns).sum(axis=1)
        held = daily["holdings_return"].to_numpy()
        assert held[0] == 0.0 and daily["invested"].iloc[0] == 0.0
        np.testing.assert_allclose(held, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(daily["invested"], yesterday.sum(axis=1), rtol=0, atol=1e-12)
        late = (close_w.to_numpy() * returns).sum(axis=1)
        assert (np.abs(late - held) > 1e-4).mean() > 0.8  # the timing is visible in the data


def test_pre_return_weights_are_the_previous_close_weights(
    attributed: Path, cn_dataset_dir: Path
) -> None:
    """Row d of `pre_return_weights` is positions.parquet's weights at day d-1's close
    (row 0 empty): exactly, name by name, for a book that turns over."""
    panel = load_dataset(cn_dataset_dir).panel
    for folder in _episodes(attributed):
        steps = pd.read_parquet(folder / "steps.parquet")
        dates = pd.DatetimeIndex(pd.to_datetime(steps["date"]))
        positions = pd.read_parquet(folder / "positions.parquet")
        weights = pre_return_weights(positions, steps["date"], panel.column_map, len(panel.symbols))
        close_w = _close_weights(folder, dates)
        cols = [panel.column(s) for s in close_w.columns]
        assert not weights[0].any()
        np.testing.assert_array_equal(weights[1:, cols], close_w.to_numpy()[:-1])
        assert weights.sum() == pytest.approx(close_w.to_numpy()[:-1].sum(), abs=1e-9)
        changed = np.abs(np.diff(close_w.to_numpy(), axis=0)).sum(axis=1)
        assert (changed > 1e-6).all()  # a day's shift would show on every row


def test_pre_return_weights_line_up_with_the_engine(attributed: Path) -> None:
    """On days without orders the NAV moves only with the held names (plus unadjusted
    corporate actions), so Trading equals its corporate-action part to 1e-10."""
    checked = 0
    for folder in _episodes(attributed):
        daily = pd.read_parquet(folder / "attribution.parquet")
        steps = pd.read_parquet(folder / "steps.parquet").set_index("date")
        quiet = steps["n_orders"].reindex(daily.index).to_numpy() == 0
        quiet &= daily["invested"].to_numpy() > 0
        gap = (daily["trading"] - daily["corporate_actions"]).to_numpy()[quiet]
        assert np.abs(gap).max() < 1e-10
        checked += int(quiet.sum())
    assert checked > 30


def test_summary_links_to_total_return(attributed: Path) -> None:
    summary = pd.read_parquet(attributed / SUMMARY_FILE)
    assert set(summary["cohort"]) == {"rule"}
    for _, row in summary.iterrows():
        metrics = json.loads(
            (attributed / "episodes" / row["episode_id"] / "metrics.json").read_text()
        )
        assert row["total_return"] == pytest.approx(metrics["total_return"], abs=1e-12)
        linked = sum(row[c] for c in COMPONENTS)
        assert linked == pytest.approx(row["total_return"], abs=1e-10)
        assert row["reconciliation_error"] < 1e-10
        kept = row["factors"].split(",")
        styles = sum(row[f"style_{f}"] for f in kept)
        assert styles == pytest.approx(row["style"], abs=1e-10)


def test_factor_model_record_says_how_amount_was_obtained(attributed: Path) -> None:
    records = list((attributed / "attribution").glob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert "estimated as volume x close" in record["amount_source"]
    assert record["calibration"][1] < "2024-07-01"
    assert record["days_fitted"] == record["days"]
    assert 250 <= record["mean_names"] <= 300
    assert all(v <= 5.0 for v in record["vif"].values())


def test_llm_episodes_form_their_own_cohort_in_the_report(
    real_run: Path, cn_dataset_dir: Path, tmp_path: Path
) -> None:
    """An episode recorded as an LLM agent's is attributed the same way, in cohort `llm`,
    and the report groups it by mode and mask."""
    import shutil

    from tradebench.report import build_report

    run_dir = tmp_path / "run"
    shutil.copytree(real_run / "episodes" / "mom_s0", run_dir / "episodes" / "llm-a_s0")
    meta_file = run_dir / "episodes" / "llm-a_s0" / "episode.json"
    meta = json.loads(meta_file.read_text())
    meta |= {"agent": "llm-a", "kind": "llm", "mode": "memory_only", "mask": "bright"}
    meta.pop("baseline")
    meta_file.write_text(json.dumps(meta))
    attribute_run(run_dir, dataset=cn_dataset_dir, config=CONFIG)
    summary = pd.read_parquet(run_dir / SUMMARY_FILE)
    assert summary["cohort"].tolist() == ["llm"]
    html = build_report(run_dir).read_text()
    assert "llm-a · memory_only · bright" in html
    assert "cohort: llm" in html
