"""`tradebench run --executor/--address`: bad values are one error line before any work,
with or without Ray installed."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from tradebench.cli import app


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    spec = {
        "dataset": "synthetic:cn",
        "windows": [{"start": "2022-03-01", "end": "2022-03-03"}],
        "agents": [{"name": "ew", "baseline": "equal_weight"}],
    }
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def _error(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    errors = [x for x in result.output.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def test_address_needs_the_ray_executor(tmp_path: Path) -> None:
    out = tmp_path / "run"
    line = _error(["run", str(_spec(tmp_path)), "-o", str(out), "--address", "10.0.0.1:6379"])
    assert "--executor ray" in line
    assert not out.exists()  # refused before anything was written


def test_unknown_executor_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    line = _error(["run", str(_spec(tmp_path)), "-o", str(out), "--executor", "dask"])
    assert "local or ray" in line and not out.exists()


def test_executor_in_the_spec_is_validated(tmp_path: Path) -> None:
    path = _spec(tmp_path)
    spec = yaml.safe_load(path.read_text()) | {"executor": "spark"}
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert "executor" in _error(["run", str(path), "-o", str(tmp_path / "run")])


def test_a_local_folder_reruns_under_the_ray_executor(tmp_path: Path) -> None:
    """The executor is a transport setting: a finished local folder accepts a rerun with
    `--executor ray`, which finds nothing left to do and rewrites the same summary."""
    out, spec = tmp_path / "run", _spec(tmp_path)
    assert CliRunner().invoke(app, ["run", str(spec), "-o", str(out)]).exit_code == 0
    first = (out / "summary.parquet").read_bytes()
    again = CliRunner().invoke(app, ["run", str(spec), "-o", str(out), "--executor", "ray"])
    assert again.exit_code == 0, again.output
    assert (out / "summary.parquet").read_bytes() == first
    assert "executor: ray" in (out / "spec.yaml").read_text()
