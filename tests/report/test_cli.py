"""`tradebench report RUN_DIR` through typer's CliRunner."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer
from typer.testing import CliRunner

from tradebench.cli.report import report

runner = CliRunner()
app = typer.Typer()
app.command()(report)


def test_writes_the_report_and_prints_its_path(raw_run_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(raw_run_dir, run)
    result = runner.invoke(app, [str(run), "--samples", "2", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert (run / "report.html").exists()
    assert "report.html" in result.output


def test_missing_folder_exits_1_without_traceback(tmp_path: Path) -> None:
    result = runner.invoke(app, [str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert "does not exist" in result.output
    assert "Traceback" not in result.output


def test_empty_folder_exits_1(tmp_path: Path) -> None:
    result = runner.invoke(app, [str(tmp_path)])
    assert result.exit_code == 1
    assert "no episodes" in result.output
