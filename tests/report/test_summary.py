"""`summarise_episodes`: one row per episode folder, read from the files the run wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.report.run_folder import LLM_AGENT, LLM_EPISODES, episode_id
from tradebench.errors import ConfigError
from tradebench.report import SUMMARY_COLUMNS, summarise_episodes, write_summary
from tradebench.runs.summary import normalise_summary


@pytest.fixture(scope="module")
def summary(raw_run_dir: Path) -> pd.DataFrame:
    return summarise_episodes(raw_run_dir).set_index("episode_id")


def test_one_row_per_episode_folder(raw_run_dir: Path, summary: pd.DataFrame) -> None:
    folders = sorted(p.name for p in (raw_run_dir / "episodes").iterdir())
    assert list(summary.index) == folders
    assert list(summary.reset_index().columns) == list(SUMMARY_COLUMNS)


def test_kind_status_and_grid_cells(summary: pd.DataFrame) -> None:
    assert summary["kind"].value_counts().to_dict() == {"llm": 6, "baseline": 4, "benchmark": 1}
    assert summary["status"].value_counts().to_dict() == {"done": 9, "running": 1, "failed": 1}
    ep = summary.loc[episode_id(LLM_AGENT, 1, "memory_only", "bright")]
    assert (ep["agent"], ep["mode"], ep["mask"], ep["seed"]) == (
        LLM_AGENT,
        "memory_only",
        "bright",
        1,
    )
    assert (ep["window_start"], ep["window_end"]) == ("2021-03-01", "2021-04-30")
    assert summary.loc[episode_id("cash", 0), "mode"] == "n/a"


def test_metrics_match_metrics_json(raw_run_dir: Path, summary: pd.DataFrame) -> None:
    for eid in summary.index[summary["status"] == "done"]:
        metrics = json.loads((raw_run_dir / "episodes" / eid / "metrics.json").read_text())
        row = summary.loc[eid]
        for key in ("total_return", "sharpe", "max_drawdown", "ece"):
            expected = np.nan if metrics[key] is None else metrics[key]
            np.testing.assert_equal(row[key], expected)
        assert row["benchmark_total_return"] == pytest.approx(metrics["benchmark"]["total_return"])
    for mode, mask, seed, final in LLM_EPISODES:
        row = summary.loc[episode_id(LLM_AGENT, seed, mode, mask)]
        assert row["total_return"] == pytest.approx(final / 1e6 - 1)


def test_tokens_and_cost_are_step_sums(summary: pd.DataFrame) -> None:
    done = summary.loc[episode_id(LLM_AGENT, 0, "memory_only", "bright")]
    n = done["n_steps"]
    assert (done["tokens_in"], done["tokens_out"]) == (1000 * n, 200 * n)
    assert done["cost_usd"] == pytest.approx(0.01 * n)
    running = summary.loc[episode_id(LLM_AGENT, 2, "memory_only", "bright")]
    assert (running["n_steps"], running["tokens_in"]) == (5, 5000)
    assert np.isnan(running["total_return"])
    baseline = summary.loc[episode_id("equal_weight", 0)]
    assert np.isnan(baseline["tokens_in"]) and np.isnan(baseline["cost_usd"])


def test_missing_run_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        summarise_episodes(tmp_path / "nope")
    assert summarise_episodes(tmp_path).empty


def test_normalise_fills_a_sparse_summary() -> None:
    sparse = pd.DataFrame(
        {
            "episode_id": ["b", "a", "c"],
            "agent": ["benchmark", "gpt", "ew"],
            "mode": [None, "memory_only", None],
            "window_start": [pd.Timestamp("2024-01-02")] * 3,
            "total_return": [0.1, None, 0.2],
        }
    )
    out = normalise_summary(sparse)
    assert list(out.columns) == list(SUMMARY_COLUMNS)
    assert list(out["episode_id"]) == ["a", "b", "c"]
    assert list(out["kind"]) == ["llm", "benchmark", "baseline"]
    assert list(out["mode"]) == ["memory_only", "n/a", "n/a"]
    assert list(out["mask"]) == ["n/a"] * 3
    assert list(out["window_start"]) == ["2024-01-02"] * 3
    assert out["sharpe"].isna().all() and out["n_steps"].tolist() == [0, 0, 0]


def test_write_summary_round_trips(raw_run_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(raw_run_dir, run)
    path = write_summary(run)
    assert path == run / "summary.parquet"
    assert not list(run.glob("*.partial"))
    pd.testing.assert_frame_equal(
        normalise_summary(pd.read_parquet(path)), summarise_episodes(raw_run_dir)
    )
