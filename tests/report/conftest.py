"""A run folder built once per session, with and without `summary.parquet`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.report.run_folder import build_run_folder
from tradebench.report import write_summary


@pytest.fixture(scope="session")
def raw_run_dir(synth_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Episode folders and spec.yaml only (no summary.parquet); do not write into it."""
    return build_run_folder(synth_dataset_dir, tmp_path_factory.mktemp("run") / "run")


@pytest.fixture(scope="session")
def run_dir(raw_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run folder with `summary.parquet` written by `write_summary`."""
    out = tmp_path_factory.mktemp("run_summary") / "run"
    shutil.copytree(raw_run_dir, out)
    write_summary(out)
    return out
