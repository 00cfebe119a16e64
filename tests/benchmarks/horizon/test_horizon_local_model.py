"""The probe against a real model server (llama.cpp serving the bundled SmolLM2-135M).

Plumbing, not memory: eight real CSI300 questions reach a real OpenAI-compatible server
(one attempt each), every reply is read as a letter or counted wrong, and the curve and its
controls are written. Few questions keep it cheap; docs/horizon.md has the measured curve.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.llm.test_llm_local_model import local_server  # noqa: F401
from tradebench.benchmarks.horizon.benchmark import read_letter
from tradebench.cli import app
from tradebench.llm.local import LocalServer
from tradebench.runs.trace import trace_lines

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]


def test_probe_runs_on_a_real_local_model(
    local_server: LocalServer,  # noqa: F811
    cn_dataset_dir: Path,
    tmp_path: Path,
) -> None:
    spec = {
        "benchmark": "horizon",
        "dataset": str(cn_dataset_dir),
        "windows": [{"start": "2024-05-01", "end": "2024-06-30"}],
        "masks": ["bright", "blinded"],
        "concurrency": 1,
        "agents": [{"name": "smollm2", "provider": "openai", "model": local_server.alias,
                    "base_url": local_server.base_url, "max_tokens": 16, "max_attempts": 1}],
        "options": {"questions_per_month": 2, "concurrency": 1,
                    "serving_dates": {"smollm2": "2024-05-20"}},
    }  # fmt: skip
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(tmp_path / "spec.yaml"), "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    for mask in ("bright", "blinded"):
        folder = tmp_path / "run" / "episodes" / f"smollm2_{mask}_s0_20240501-20240630"
        answers = pd.read_parquet(folder / "answers.parquet")
        assert len(answers) == 4 and list(answers["month"]) == ["2024-05"] * 2 + ["2024-06"] * 2
        traces = trace_lines(folder) or []
        for row, trace in zip(answers.itertuples(), traces, strict=True):
            letter = read_letter(trace["reply"])
            assert row.letter == letter or (pd.isna(row.letter) and letter is None)
            assert row.correct == (row.letter == row.answer)
    result = runner.invoke(app, ["horizon", "show", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    h = json.loads((tmp_path / "run" / "horizon.json").read_text())["agents"][0]
    assert [c["n"] for c in h["controls"]] == [4, 2]  # blinded; June is after serving
    assert not h["powered"]  # two questions a month detect nothing; the doc says so
