"""The core install works without optional extras, and a missing extra gets a clear error."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
for name in ("backtrader", "lightgbm", "sklearn", "llama_cpp", "qlib", "verifiers"):
    sys.modules[name] = None  # importing any of them now raises ImportError
from typer.testing import CliRunner
from tradebench.cli import app
runner = CliRunner()
assert runner.invoke(app, ["--help"]).exit_code == 0
result = runner.invoke(app, ["mcq", "build", "--bars", "missing.parquet", "--symbol", "AAPL",
                             "--start", "2020-01-01", "--end", "2021-01-01", "--all-templates",
                             "--seed", "1", "-o", "q.jsonl"])
assert result.exit_code == 1, result.output
assert "pip install 'tradebench[mcq]'" in result.output, result.output
assert "Traceback" not in result.output
print("ok")
"""


def test_cli_without_extras(tmp_path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")
