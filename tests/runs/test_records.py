"""The run-folder records: folders written before records were versioned still load,
summarise to what that version wrote, and report; today's records round-trip."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tradebench.benchmarks import build_report
from tradebench.metrics.reliability import FAULT_COLUMNS
from tradebench.runs.records import RECORD_VERSION, EpisodeRecord, RunRecord
from tradebench.runs.broker.rows import ORDER_COLUMNS, POSITION_COLUMNS, STEP_COLUMNS
from tradebench.runs.store import read_episode_record, read_run_record
from tradebench.runs.summary import SUMMARY_COLUMNS, normalise_summary, summarise_episodes

V1 = Path(__file__).parent / "data" / "v1_runs"


@pytest.mark.parametrize("run", ["portfolio", "single_stock"])
def test_version_1_folders_summarise_as_version_1_did(run: str) -> None:
    """Every column version 1 wrote comes out the same; later columns are only added."""
    raw = pd.read_parquet(V1 / run / "summary.parquet")
    written = normalise_summary(raw)[list(raw.columns)]
    pd.testing.assert_frame_equal(summarise_episodes(V1 / run)[list(raw.columns)], written)


def test_version_1_records_read_into_todays_types() -> None:
    folder = V1 / "portfolio" / "episodes" / "scripted_memory_only_blinded_s0_20220301-20220304"
    record = read_episode_record(folder)
    assert record is not None and record.schema_version == 1
    assert (record.benchmark, record.kind, record.mode, record.mask) == (
        "portfolio",
        "llm",
        "memory_only",
        "blinded",
    )
    assert record.extras["price_mode"] == "raw" and len(record.prompt_sha256 or "") == 64
    run = read_run_record(folder)
    assert run is not None and run.agent.name == "scripted" and run.agent.args == {}
    assert run.rules["lot_size"] == 100 and run.benchmark_start is not None
    single = read_episode_record(
        V1 / "single_stock" / "episodes" / "bh_adaptive_TSLA_20210104-20210226_s0"
    )
    assert single is not None and single.benchmark == "single_stock"
    assert single.extras["symbol"] == "TSLA" and single.baseline == {
        "name": "buy_and_hold",
        "args": {},
    }


def test_version_1_tables_are_a_prefix_of_todays_columns() -> None:
    """Columns are only ever appended (nullable), so older tables read as today's."""
    for folder in (V1 / "portfolio" / "episodes").iterdir():
        for name, columns in (
            ("steps", STEP_COLUMNS),
            ("positions", POSITION_COLUMNS),
            ("orders", ORDER_COLUMNS),
        ):
            written = list(pd.read_parquet(folder / f"{name}.parquet").columns)
            assert written == columns[: len(written)] and len(written) >= 6


def test_version_1_folders_report(tmp_path: Path) -> None:
    shutil.copytree(V1, tmp_path / "v1")
    html = build_report(tmp_path / "v1" / "portfolio").read_text()
    assert "scripted · memory_only · blinded" in html and "Metric panel" in html
    html = build_report(tmp_path / "v1" / "single_stock").read_text()
    assert "Single-stock persona · adaptive" in html


def test_todays_records_round_trip_with_the_benchmarks_own_fields() -> None:
    record = EpisodeRecord(
        benchmark="toy",
        episode_id="a_s0",
        agent="a",
        kind="baseline",
        window={"start": "2024-01-02", "end": "2024-01-31"},
        status="done",
        persona="adaptive",
    )
    assert record.schema_version == RECORD_VERSION
    again = EpisodeRecord.model_validate_json(record.model_dump_json())
    assert again == record and again.extras == {"persona": "adaptive"}
    run = RunRecord(
        agent={"name": "ew", "args": {"every": 5}}, start="2024-01-02", end="2024-01-31"
    )
    assert RunRecord.model_validate(run.model_dump(mode="json")) == run


@pytest.mark.parametrize(
    ("written", "kind"),
    [
        ({"agent": "benchmark"}, "benchmark"),
        ({"agent": {"name": "gpt", "args": {"model": "m"}}, "mode": "open_research"}, "llm"),
        ({"agent": "ew", "mode": None}, "baseline"),
        ({"agent": "ew", "kind": "llm"}, "llm"),
    ],
)
def test_version_1_records_without_a_kind_get_one(written: dict, kind: str, tmp_path: Path) -> None:
    folder = tmp_path / "ep"
    folder.mkdir()
    (folder / "episode.json").write_text(
        json.dumps({**written, "window": ["2024-01-02", "2024-01-31"], "status": "done"})
    )
    record = read_episode_record(folder)
    assert record is not None and record.kind == kind and record.episode_id == "ep"
    assert str(record.window.start) == "2024-01-02" and record.benchmark == "portfolio"
    if isinstance(written["agent"], dict):
        assert record.agent == "gpt/m"


def test_fault_columns_are_appended_last_to_the_step_rows() -> None:
    assert STEP_COLUMNS[-len(FAULT_COLUMNS) :] == list(FAULT_COLUMNS)
    assert SUMMARY_COLUMNS[-len(FAULT_COLUMNS) :] == FAULT_COLUMNS


def test_version_1_folders_have_no_fault_record_not_zero_faults(tmp_path: Path) -> None:
    """Steps written before faults were recorded: totals null (not 0), the report says so."""
    summary = summarise_episodes(V1 / "portfolio")
    assert summary[list(FAULT_COLUMNS)].isna().all().all()
    shutil.copytree(V1, tmp_path / "v1")
    html = build_report(tmp_path / "v1" / "portfolio").read_text()
    assert "Endpoint faults" in html and "Not recorded" in html
