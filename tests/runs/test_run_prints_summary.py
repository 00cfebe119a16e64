"""`tradebench run` ends with the figure the user came for: the episodes' table, whose
numbers are the summary file's (mean total return per agent, raw, never annualised)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import yaml
from typer.testing import CliRunner

from tradebench.cli import app


def test_run_prints_each_agents_total_return_from_the_summary(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    spec = {
        "benchmark": "portfolio",
        "dataset": str(synth_dataset_dir),
        "windows": [{"start": "2024-01-02", "end": "2024-01-31"}],
        "seeds": [0, 1],
        "agents": [
            {"name": "ew", "agent": "equal_weight"},
            {"name": "mom", "agent": "momentum_topk", "args": {"k": 5}},
        ],
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "spec.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    summary = pd.read_parquet(out / "summary.parquet")
    for agent, g in summary.groupby("agent"):
        line = next(row for row in result.output.splitlines() if re.search(rf"\b{agent}\b", row))
        assert f"{g['total_return'].mean():+.2%}" in line, (agent, line)
        assert f"{(g['status'] == 'done').sum()}/{len(g)}" in line
    assert "sharpe" not in result.output.lower()  # nothing annualised in the run's table
