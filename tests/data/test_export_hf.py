"""Hugging Face export: an MCQ set and a run summary, saved, reloaded, compared row by row."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

datasets = pytest.importorskip("datasets", reason="needs the `hf` extra (pip install datasets)")

from tests.benchmarks.mcq.conftest import aapl_ref  # noqa: E402
from tests.report.run_folder import build_run_folder  # noqa: E402
from tradebench.benchmarks.mcq.bars import resolve  # noqa: E402
from tradebench.benchmarks.mcq.build.builder import BuildSpec, build  # noqa: E402
from tradebench.benchmarks.mcq.records import write_jsonl  # noqa: E402
from tradebench.errors import ConfigError  # noqa: E402
from tradebench.integrations.hf_datasets import HFExport, export_hf, mcq_record_from_row  # noqa: E402
from tradebench.runs.summary import write_summary  # noqa: E402


@pytest.fixture(scope="module")
def mcq_file(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six hard questions on AAPL (one comparative, with an `alternative` backtest)."""
    ref, bars = resolve(aapl_ref(shared_data))
    spec = BuildSpec(
        data=ref,
        seed=3,
        mode="sample",
        num_questions=6,
        difficulty="hard",
        strategies=("sma_cross",),
    )
    path = tmp_path_factory.mktemp("mcq") / "questions.jsonl"
    write_jsonl(build(spec, bars).records, path)
    return path


@pytest.fixture(scope="module")
def run_dir(synth_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = build_run_folder(synth_dataset_dir, tmp_path_factory.mktemp("run") / "demo-run")
    write_summary(out)
    return out


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def test_mcq_set_round_trips_row_by_row(mcq_file: Path, tmp_path: Path) -> None:
    result = export_hf(HFExport(out=tmp_path / "hf", mcq_files=(mcq_file,)))
    loaded = datasets.load_from_disk(str(result.folders["mcq"]))
    source = [json.loads(line) for line in mcq_file.read_text().splitlines()]
    assert len(loaded) == len(source) == result.rows["mcq"] == 6
    assert loaded.features["option_A"].dtype == "string"
    assert loaded.features["seed"].dtype == "int64"
    for row, want in zip(loaded, source, strict=True):
        assert row["question"] == want["question"] and row["answer"] == want["answer"]
        assert {k: row[f"option_{k}"] for k in "ABCD"} == want["options"]
        assert json.loads(row["config_json"]) == want["config"]
        back = mcq_record_from_row(row).model_dump(mode="json")
        assert back == want  # the exact record, nested parts included
    assert any(row["alternative_json"] is not None for row in loaded)
    assert any(row["alternative_json"] is None for row in loaded)


def test_run_summary_round_trips_row_by_row(run_dir: Path, tmp_path: Path) -> None:
    result = export_hf(HFExport(out=tmp_path / "hf", run_dirs=(run_dir,)))
    loaded = datasets.load_from_disk(str(result.folders["runs"]))
    source = pd.read_parquet(run_dir / "summary.parquet")
    assert loaded.column_names == ["run", *source.columns]
    assert len(loaded) == len(source) == 11
    assert loaded.features["total_return"].dtype == "float64"
    for row, want in zip(loaded, source.to_dict("records"), strict=True):
        assert row["run"] == "demo-run"
        for col, value in want.items():
            expected = None if value is None or value is pd.NA else value
            if isinstance(expected, float) and math.isnan(expected):
                expected = None
            assert _same(row[col], expected), (want["episode_id"], col, row[col], value)


def test_missing_summary_is_rebuilt_and_push_needs_a_token(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "bare-run"
    shutil.copytree(run_dir, bare)
    (bare / "summary.parquet").unlink()
    result = export_hf(HFExport(out=tmp_path / "hf", run_dirs=(bare,)))
    assert result.rows["runs"] == 11
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="HF_TOKEN"):
        export_hf(HFExport(out=tmp_path / "push", run_dirs=(bare,), push="someone/tradebench"))
    assert not (tmp_path / "push").exists()  # refused before writing anything
