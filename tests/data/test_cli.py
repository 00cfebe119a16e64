"""`tradebench data ...` and `tradebench demo` through typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tradebench.cli import app

runner = CliRunner()


def test_synth_then_info(tmp_path: Path) -> None:
    out = tmp_path / "syn"
    result = runner.invoke(
        app, ["data", "synth", "-o", str(out), "--seed", "2", "--names", "30", "--days", "60"]
    )
    assert result.exit_code == 0, result.output
    assert "synthetic-cn-seed2" in result.output
    result = runner.invoke(app, ["data", "info", str(out), "--stats"])
    assert result.exit_code == 0, result.output
    assert "median_stock_vol" in result.output and "findings" in result.output


def test_import_long_real(shared_data: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "data",
            "import",
            str(shared_data / "cn" / "csi300_members_daily_2018_2026.parquet"),
            "-o",
            str(tmp_path / "cn"),
            "--market",
            "cn",
            "--index",
            str(shared_data / "cn" / "csi300_index_daily.csv"),
            "--index-symbol",
            "SH000300",
            "--membership",
            str(shared_data / "universe" / "csi300_membership.csv"),
            "--symbols",
            "SZ000001,SH600519",
            "--start",
            "2020-12-01",
            "--end",
            "2021-01-31",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "factor_glitch" in result.output
    assert "SZ000001@2020-12-31" in result.output


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    result = runner.invoke(app, ["data", "info", str(tmp_path)])
    assert result.exit_code == 1
    assert "not a tradebench dataset" in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(
        app, ["data", "import", str(tmp_path / "nope.csv"), "-o", str(tmp_path / "x")]
    )
    assert result.exit_code == 1 and "does not exist" in result.output


def test_demo_offline(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "-o", str(tmp_path / "demo"), "--no-local-model"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "demo" / "data" / "synthetic-cn-seed0" / "manifest.json").exists()
    assert (tmp_path / "demo" / "report.html").exists()
    assert "report.html" in result.output and "equal_weight" in result.output


def test_help_teaches() -> None:
    result = runner.invoke(app, ["data", "import", "--help"])
    assert result.exit_code == 0
    assert "--membership" in result.output and "qlib" in result.output
