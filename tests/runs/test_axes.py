"""Axes are declared by benchmarks: a spec naming a value its benchmark does not declare is
refused in one line naming the allowed values; an omitted axis is recorded as what ran; and
folders written before benchmarks declared their axes (every omitted `masks` recorded as
the four levels) still resume, a fifth mask level in the table or not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import tests.runs.test_toy_benchmark  # noqa: F401  (registers the toy benchmark)
from tradebench.cli import app
from tradebench.data.dataset import load_dataset
from tradebench.runs.executor import resolve_dataset
from tradebench.runs.guard import GUARD_FILE, manifest_sha256

runner = CliRunner()
BEFORE = Path(__file__).parent / "data" / "before_axes"
"""Run folders written by the code before axes were declared (`synthetic:cn`, baselines)."""
PORTFOLIO_MODES = ["memory_only", "fixed_candidate", "open_research"]
SHIPPED_MASKS = ["bright", "stock_blind", "date_blind", "blinded"]


def _write(tmp_path: Path, spec: dict) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _portfolio(dataset: str, **axes: list[str]) -> dict:
    """A baseline-only portfolio spec over four days."""
    return {
        "benchmark": "portfolio",
        "dataset": dataset,
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "agents": [{"name": "ew", "baseline": "equal_weight"}],
        **axes,
    }


def _toy(dataset: str, **axes: list[str]) -> dict:
    """A baseline-only toy spec (the toy declares no axes)."""
    return {
        "benchmark": "toy",
        "dataset": dataset,
        "windows": [{"start": "2022-03-01", "end": "2022-03-31"}],
        "seeds": [0, 1],
        "agents": [{"name": "up", "baseline": "always_up"}],
        "options": {"steps": 3},
        **axes,
    }


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("name", "axes", "expected"),
    [
        (
            "portfolio",
            {"modes": ["nonsense_mode"]},
            "modes: 'nonsense_mode' not declared by benchmark 'portfolio'; allowed: "
            "memory_only, fixed_candidate, open_research",
        ),
        (
            "portfolio",
            {"masks": ["bright", "half_blind"]},
            "masks: 'half_blind' not declared by benchmark 'portfolio'; allowed: "
            "bright, stock_blind, date_blind, blinded",
        ),
        (
            "toy",
            {"masks": ["bright"]},
            "masks: benchmark 'toy' has no masks axis (allowed: none); remove "
            "`masks: ['bright']` from the spec",
        ),
    ],
)
def test_an_undeclared_value_is_one_error_line(
    synth_dataset_dir: Path, tmp_path: Path, name: str, axes: dict, expected: str
) -> None:
    build = _portfolio if name == "portfolio" else _toy
    spec = _write(tmp_path, build(str(synth_dataset_dir), **axes))
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    assert result.exit_code != 0
    lines = _error_lines(result.output)
    assert len(lines) == 1 and lines[0].endswith(expected), result.output
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_omitted_axes_are_recorded_as_what_ran(synth_dataset_dir: Path, tmp_path: Path) -> None:
    for name, spec in (
        ("portfolio", _portfolio(str(synth_dataset_dir))),
        ("toy", _toy(str(synth_dataset_dir))),
    ):
        out = tmp_path / name
        result = runner.invoke(app, ["run", str(_write(tmp_path, spec)), "-o", str(out)])
        assert result.exit_code == 0, result.output
        written = yaml.safe_load((out / "spec.yaml").read_text())
        if name == "portfolio":
            assert written["modes"] == PORTFOLIO_MODES and written["masks"] == SHIPPED_MASKS
        else:  # the toy has neither axis: nothing of either ran
            assert written["modes"] == [] and written["masks"] == []


def _unfinish(folder: Path) -> None:
    """Leave a finished episode as a kill after its first step would."""
    lines = (folder / "progress.jsonl").read_text().splitlines(keepends=True)
    (folder / "progress.jsonl").write_text(lines[0])
    for name in ("metrics.json", "trace.jsonl.zst"):
        (folder / name).unlink(missing_ok=True)
    meta = json.loads((folder / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**meta, "status": "running"}))


def _sign_regenerated_data(out: Path, dataset: str) -> None:
    """Generate the folder's synthetic data again and record its manifest in `guard.json`:
    the parquet bytes (so the manifest's checksums) depend on the writer's version, and
    this test is about the spec, not the data."""
    manifest = load_dataset(resolve_dataset(dataset, out)).manifest
    guard = json.loads((out / GUARD_FILE).read_text())
    guard["dataset_manifest_sha256"] = manifest_sha256(manifest)
    (out / GUARD_FILE).write_text(json.dumps(guard))


def _resume_before_axes(tmp_path: Path, name: str, episode: str) -> pd.DataFrame:
    """Copy a folder written before axes were declared, unfinish one episode, rerun its
    own spec into it; the summary after the rerun."""
    out = tmp_path / name
    shutil.copytree(BEFORE / name, out)
    recorded = yaml.safe_load((out / "spec.yaml").read_text())
    assert recorded["masks"] == SHIPPED_MASKS  # the old default, recorded whatever ran
    _unfinish(out / "episodes" / episode)
    raw = yaml.safe_load((BEFORE / f"{name}.yaml").read_text())
    _sign_regenerated_data(out, raw["dataset"])
    spec = _write(tmp_path, raw)
    result = runner.invoke(app, ["run", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return pd.read_parquet(out / "summary.parquet").set_index("episode_id")


@pytest.mark.parametrize("with_fifth_level", [False, True])
def test_folders_written_before_axes_resume(
    tmp_path: Path, request: pytest.FixtureRequest, with_fifth_level: bool
) -> None:
    if with_fifth_level:
        request.getfixturevalue("fifth_level")
    summary = _resume_before_axes(tmp_path, "toy", "up_s1")
    assert (summary["status"] == "done").all() and (summary["n_steps"] == 3).all()
    summary = _resume_before_axes(tmp_path, "portfolio", "ew_s0_20220301-20220304")
    assert (summary["status"] == "done").all() and (summary["n_steps"] == 4).all()
