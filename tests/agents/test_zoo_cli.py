"""`tradebench baselines train|list`, then `run` and `attribute` reading the trained cache.

A tiny LSTM (three seeds) and a ridge regression train on the real CSI300 data before a
one-week window; the run must load them (no new model files), and `attribute` scores the
LSTM day by day through its own sequence path. Skips without torch or scikit-learn.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tradebench.cli import app

runner = CliRunner(env={"COLUMNS": "220"})
TINY_LSTM = {"hidden_size": 8, "num_layers": 1, "n_epochs": 1, "n_seeds": 3}
TINY_LSTM |= {"rows_per_epoch": 2000, "batch_size": 500}


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("sklearn") is None,
    reason="needs torch and scikit-learn, the zoo extra: pip install 'tradebench[zoo]'",
)
def test_train_once_then_run_and_attribute_from_the_cache(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    cache = str(tmp_path / "models")
    common = {"train_days": 40, "valid_days": 10, "topk": 20, "n_drop": 2, "cache_dir": cache}
    spec = {
        "benchmark": "portfolio",
        "dataset": str(cn_dataset_dir),
        "windows": [{"start": "2024-07-01", "end": "2024-07-05"}],
        "seeds": [0],
        "agents": [
            {"name": "lstm", "baseline": "lstm", "args": {**common, "params": TINY_LSTM}},
            {"name": "ridge", "baseline": "ridge", "args": common},
            {"name": "ew", "baseline": "equal_weight"},
        ],
    }
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))

    result = runner.invoke(app, ["baselines", "train", str(spec_file)])
    assert result.exit_code == 0, result.output
    assert result.output.count("trained") == 2 and "ICIR" in result.output
    assert "±" in result.output  # the LSTM's seed spread
    models = sorted(Path(cache).glob("*.pkl"))
    assert len(models) == 2

    again = runner.invoke(app, ["baselines", "train", str(spec_file), "--only", "ridge"])
    assert again.exit_code == 0, again.output
    assert "cache" in again.output and "trained" not in again.output

    listing = runner.invoke(app, ["baselines", "list", "--cache-dir", cache])
    assert listing.exit_code == 0, listing.output
    assert "double_ensemble" in listing.output and "gats" in listing.output

    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["run", str(spec_file), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert sorted(Path(cache).glob("*.pkl")) == models  # the run trained nothing new

    result = runner.invoke(app, ["attribute", str(run_dir), "--calibration-days", "30"])
    assert result.exit_code == 0, result.output
    episodes = {p.name.split("_")[0]: p for p in (run_dir / "episodes").iterdir()}
    signal = json.loads((episodes["lstm"] / "signal.json").read_text())
    assert signal["ic_days"] >= 3 and -1 <= signal["ic"] <= 1
    assert len(signal["valid"]["seeds"]) == 3


def test_train_rejects_a_spec_without_factor_models(tmp_path: Path) -> None:
    spec = {
        "benchmark": "portfolio",
        "dataset": "synthetic:cn",
        "windows": [{"start": "2023-08-01", "end": "2023-08-10"}],
        "agents": [{"name": "ew", "baseline": "equal_weight"}],
    }
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    result = runner.invoke(
        app, ["baselines", "train", str(spec_file), "--data-dir", str(tmp_path / "data")]
    )
    assert result.exit_code == 1
    assert "no factor-model agents" in result.output
    assert "Traceback" not in result.output
