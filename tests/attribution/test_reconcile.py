"""Real data: the four components reconcile with the realised NAV of real baseline runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.attribution.run import SUMMARY_FILE, attribute_run
from tradebench.metrics.attribution import COMPONENTS
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
