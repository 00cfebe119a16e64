"""`tradebench data pull` and `data export-hf` through typer's CliRunner (no network)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tradebench.cli import app

runner = CliRunner()
V1_RECORDS = (
    Path(__file__).resolve().parents[1] / "benchmarks" / "mcq" / "data" / "records_v1.jsonl"
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "quandl", "--symbols", "AAPL"], "unknown --source 'quandl'"),
        (["--source", "yfinance"], "--symbols"),
        (["--source", "baostock", "--symbols", "BJ830799"], "no Beijing"),
        (["--source", "akshare", "--symbols", "600519", "--start", "2024-13-01"], "not a date"),
    ],
)
def test_bad_pull_requests_get_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    base = [
        "data",
        "pull",
        "-o",
        str(tmp_path / "out"),
        "--start",
        "2024-01-02",
        "--end",
        "2024-03-01",
    ]
    result = runner.invoke(app, [*base, *args])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_cli_module_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys, tradebench.cli.data\n"
        "print(sorted(m for m in ('pandas', 'pyarrow', 'datasets', 'akshare', 'baostock', "
        "'yfinance') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_export_hf_cli_writes_a_loadable_dataset(tmp_path: Path, monkeypatch) -> None:
    datasets = pytest.importorskip("datasets", reason="needs the `hf` extra")
    result = runner.invoke(
        app, ["data", "export-hf", "--mcq", str(V1_RECORDS), "-o", str(tmp_path / "hf")]
    )
    assert result.exit_code == 0, result.output
    loaded = datasets.load_from_disk(str(tmp_path / "hf" / "mcq"))
    ids = [json.loads(line)["id"] for line in V1_RECORDS.read_text().splitlines() if line]
    assert loaded["id"] == ids
    monkeypatch.delenv("HF_TOKEN", raising=False)
    result = runner.invoke(
        app,
        [
            "data",
            "export-hf",
            "--mcq",
            str(V1_RECORDS),
            "-o",
            str(tmp_path / "push"),
            "--push",
            "someone/tb",
        ],
    )
    assert result.exit_code == 1 and "HF_TOKEN" in result.output
    assert result.output.strip().startswith("error:")
