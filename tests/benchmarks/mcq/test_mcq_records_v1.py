"""Schema-1 question files (before comparative backtests) still read and still check.

The fixture holds 18 real schema-1 records built from AAPL 2020-2024 (seed 42) before the
four re-defined templates and the two re-defined strategies changed. Their data path is
stored relative (`../shared/data/...`) and pointed at the shared folder the tests find.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.benchmarks.mcq.conftest import US_FILE
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.records import read_jsonl
from tradebench.cli.mcq import app

FIXTURE = Path(__file__).parent / "data" / "records_v1.jsonl"
CHANGED = {"max_shares", "golden_cross_count", "sma_comparison", "signal_diff"}


def _v1_file(shared_data: Path, tmp_path: Path) -> Path:
    lines = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["config"]["data"]["path"] = str(shared_data / US_FILE)
        lines.append(json.dumps(record))
    out = tmp_path / "v1.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_schema_1_records_read_and_check_by_their_own_definitions(shared_data, tmp_path):
    path = _v1_file(shared_data, tmp_path)
    records = read_jsonl(path)
    assert {r.schema_version for r in records} == {1}
    assert all(r.alternative is None for r in records)
    assert {"mean_reversion", "ewma_cross"} <= {r.strategy for r in records}
    assert {r.template for r in records} >= CHANGED
    report = check_records(records)
    assert report.ok and len(report.verdicts) == 18, report.failures
    # read as schema 2, the re-defined templates no longer match their old keys
    bumped = [r.model_copy(update={"schema_version": 2}) for r in records if r.template in CHANGED]
    assert not any(v.ok for v in check_records(bumped).verdicts)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 0 and "18/18 questions agree" in result.output
