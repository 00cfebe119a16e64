"""`tradebench mcq build` and `check` through the CLI, on a real imported dataset."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tradebench.cli.mcq import app
from tradebench.data.importers.long import LongImport, import_long

runner = CliRunner()


def test_build_and_check_from_dataset(shared_data: Path, tmp_path: Path) -> None:
    import_long(
        LongImport(
            source=shared_data / "us" / "sp500_daily_adj_2005_2025.parquet",
            out=tmp_path / "ds",
            market="us",
            symbols=("AAPL",),
            start="2019-06-01",
            end="2024-06-30",
        )
    )
    out = tmp_path / "q.jsonl"
    result = runner.invoke(
        app,
        [
            "build",
            "--dataset",
            str(tmp_path / "ds"),
            "--symbol",
            "AAPL",
            "--start",
            "2020-01-01",
            "--end",
            "2024-01-01",
            "--curated",
            "--seed",
            "9",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "30 questions" in result.output
    checked = runner.invoke(app, ["check", str(out)])
    assert checked.exit_code == 0, checked.output
    assert "30/30 questions agree" in checked.output

    lines = out.read_text().splitlines()
    record = json.loads(lines[0])
    record["answer"] = "A" if record["answer"] != "A" else "B"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    failed = runner.invoke(app, ["check", str(bad)])
    assert failed.exit_code == 1
    assert "29/30 questions agree" in failed.output


def test_build_rejects_conflicting_modes(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "build",
            "--bars",
            "x.parquet",
            "--all-templates",
            "--curated",
            "-o",
            str(tmp_path / "q.jsonl"),
        ],
    )
    assert result.exit_code == 1
    assert "exactly one of" in result.output
