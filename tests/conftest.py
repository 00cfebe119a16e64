"""Shared fixtures: the real market data folder beside the project, skipped when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """Locate `shared/data` (env `TRADEBENCH_SHARED_DATA` or `../shared/data`), or None."""
    env = os.environ.get("TRADEBENCH_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    for path in candidates:
        if (path / "README.md").exists():
            return path
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to the real market data; skips the test with a reason on a fresh clone."""
    path = shared_data_dir()
    if path is None:
        pytest.skip(
            "real market data not found: expected ../shared/data beside the repo "
            "(or set TRADEBENCH_SHARED_DATA)"
        )
    return path
