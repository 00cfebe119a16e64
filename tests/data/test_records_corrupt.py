"""A damaged records.parquet is refused with one clear line naming the file; only the data
layer and the view touch the records table."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.data.dataset import sha256_file
from tradebench.data.importers.records import RecordsImport, import_records
from tradebench.errors import DatasetCorruptError

runner = CliRunner()
SRC = Path(__file__).resolve().parents[2] / "src" / "tradebench"


@pytest.fixture()
def dataset(us_dataset_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    shutil.copytree(us_dataset_dir, out)
    rows = [
        {"kind": "news", "symbols": "AAPL", "ts_available": f"2024-01-0{d}T12:00:00Z",
         "title": f"day {d}", "body": f"text {d}"}
        for d in range(2, 9)
    ]  # fmt: skip
    src = tmp_path / "records.csv"
    pd.DataFrame(rows).to_csv(src, index=False)
    import_records(RecordsImport(dataset=out, long=(src,)))
    return out


def _refresh_checksum(dataset: Path) -> None:
    file = dataset / "records.parquet"
    manifest = json.loads((dataset / "manifest.json").read_text())
    manifest["files"]["records"]["sha256"] = sha256_file(file)
    (dataset / "manifest.json").write_text(json.dumps(manifest))


def _cli_error(dataset: Path) -> str:
    result = runner.invoke(app, ["data", "info", str(dataset)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_truncated_records_file(dataset: Path) -> None:
    file = dataset / "records.parquet"
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with pytest.raises(DatasetCorruptError, match=r"records\.parquet fails its checksum"):
        load_dataset(dataset)
    with pytest.raises(DatasetCorruptError, match=r"records\.parquet is not readable Parquet"):
        load_dataset(dataset, verify=False)
    assert "records.parquet fails its checksum" in _cli_error(dataset)


def test_edited_body_with_a_matching_file_checksum(dataset: Path) -> None:
    """Someone rewrites the file and its manifest checksum: each row's sha256 still holds."""
    file = dataset / "records.parquet"
    table = pq.read_table(file).to_pandas()
    table.loc[3, "body"] = "rewritten after the fact"
    pq.write_table(pa.Table.from_pandas(table, schema=pq.read_schema(file)), file)
    _refresh_checksum(dataset)
    with pytest.raises(DatasetCorruptError, match=r"records\.parquet: 1 records' title/body"):
        load_dataset(dataset)
    line = _cli_error(dataset)
    assert "records.parquet" in line and "no longer match their sha256" in line


def test_missing_records_file(dataset: Path) -> None:
    (dataset / "records.parquet").unlink()
    with pytest.raises(DatasetCorruptError, match=r"records\.parquet is missing"):
        load_dataset(dataset)


def test_records_file_without_a_column(dataset: Path) -> None:
    file = dataset / "records.parquet"
    pq.write_table(pq.read_table(file).drop(["ts_available"]), file)
    _refresh_checksum(dataset)
    with pytest.raises(DatasetCorruptError, match=r"records\.parquet lacks columns"):
        load_dataset(dataset)


def test_records_file_with_a_repeated_id(dataset: Path) -> None:
    file = dataset / "records.parquet"
    frame = pq.read_table(file).to_pandas()
    frame.loc[1, "record_id"] = frame.loc[0, "record_id"]
    pq.write_table(pa.Table.from_pandas(frame, schema=pq.read_schema(file)), file)
    _refresh_checksum(dataset)
    with pytest.raises(DatasetCorruptError, match=r"records\.parquet: 2 rows repeat record ids"):
        load_dataset(dataset)


# ------------------------------------------------------------------ the only door
ALLOWED = {"data", "view.py"}  # the data layer (loader, panel, importers) and the gate
HOLDERS = {"dataset", "ds", "panel", "_panel", "source", "data"}
PROBE_BUILDERS = {
    # the knowledge-horizon probe asks a model about past facts: its question builder reads
    # every record of a month to write a question (no agent reads through it), and its
    # answer check reads the raw files with its own code on purpose (independence)
    "benchmarks/horizon/questions.py",
    "benchmarks/horizon/check.py",
}


def _outside_allowed() -> list[Path]:
    return [
        p
        for p in SRC.rglob("*.py")
        if p.relative_to(SRC).parts[0] not in ALLOWED
        and p.relative_to(SRC).as_posix() not in PROBE_BUILDERS
    ]


def test_only_the_view_reads_records() -> None:
    """No module outside `data/` and `view.py` reads a dataset's or panel's `records`
    attribute or names records.parquet (calls of `view.records(...)` are the door)."""
    offenders = []
    for path in _outside_allowed():
        tree = ast.parse(path.read_text())
        calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "records" and id(node) not in calls:
                holder = node.value
                name = (
                    holder.attr if isinstance(holder, ast.Attribute) else getattr(holder, "id", "")
                )
                if name in HOLDERS:
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                cli_help = path.relative_to(SRC).as_posix() == "cli/data.py"  # help, output
                if "records.parquet" in node.value and not cli_help:
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno} (file name)")
    assert offenders == []
