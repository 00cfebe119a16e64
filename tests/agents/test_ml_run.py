"""End to end: factor-model baselines through `tradebench run`, `attribute` and `report`.

The end-to-end run trains LightGBM and scikit-learn models and skips without the `ml`
extra; the error path of `attribute` needs neither and always runs.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tradebench.cli import app

runner = CliRunner()
TRAIN = {"train_days": 120, "valid_days": 40}


@pytest.mark.skipif(
    importlib.util.find_spec("lightgbm") is None or importlib.util.find_spec("sklearn") is None,
    reason="needs lightgbm and scikit-learn, the ml extra: pip install 'tradebench[ml]'",
)
def test_factor_models_run_attribute_and_report(cn_dataset_dir: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "models")
    lgb_params = {"num_boost_round": 20, "num_leaves": 16, "lambda_l1": 0.0, "lambda_l2": 0.0}
    spec = {
        "benchmark": "portfolio",
        "dataset": str(cn_dataset_dir),
        "windows": [{"start": "2024-07-01", "end": "2024-07-12"}],
        "seeds": [0],
        "agents": [
            {
                "name": "lgb",
                "baseline": "lightgbm",
                "args": {
                    **TRAIN,
                    "topk": 30,
                    "n_drop": 3,
                    "cache_dir": cache,
                    "params": lgb_params,
                },
            },
            {
                "name": "ridge",
                "baseline": "ridge",
                "args": {**TRAIN, "topk": 30, "cache_dir": cache},
            },
            {"name": "ew", "baseline": "equal_weight"},
        ],
    }
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["run", str(spec_file), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    episodes = {p.name.split("_")[0]: p for p in (run_dir / "episodes").iterdir()}
    positions = pd.read_parquet(episodes["lgb"] / "positions.parquet")
    assert positions.groupby("date").size().max() <= 30
    assert positions.groupby("date").size().iloc[-1] >= 25

    result = runner.invoke(app, ["attribute", str(run_dir), "--calibration-days", "60"])
    assert result.exit_code == 0, result.output
    assert "estimated as volume x close" in result.output
    summary = pd.read_parquet(run_dir / "attribution_summary.parquet")
    assert set(summary["agent"]) == {"lgb", "ridge", "ew"}
    cohorts = dict(zip(summary["agent"], summary["cohort"], strict=True))
    assert cohorts == {"lgb": "factor_model", "ridge": "factor_model", "ew": "rule"}
    assert (summary["reconciliation_error"] < 1e-10).all()
    signal = json.loads((episodes["lgb"] / "signal.json").read_text())
    assert signal["ic_days"] == 10 and -1 <= signal["ic"] <= 1
    assert (episodes["ew"] / "attribution.parquet").exists()
    assert not (episodes["benchmark"] / "attribution.parquet").exists()

    result = runner.invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    html = (run_dir / "report.html").read_text()
    assert "Return attribution" in html
    assert "Ranking by selection alpha" in html
    assert "Factor-model signal quality" in html


def test_attribute_without_a_run_folder_fails_cleanly(tmp_path: Path) -> None:
    result = runner.invoke(app, ["attribute", str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert "episodes/" in result.output
