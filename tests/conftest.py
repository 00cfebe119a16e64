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


@pytest.fixture(scope="session")
def cn_dataset_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real CSI300 members, 2023-2024, with index and membership, imported once."""
    from tradebench.data.importers.long import LongImport, import_long

    out = tmp_path_factory.mktemp("cn") / "csi300"
    import_long(
        LongImport(
            source=shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
            out=out,
            market="cn",
            index_file=shared_data / "cn" / "csi300_index_daily.csv",
            index_symbol="SH000300",
            membership_file=shared_data / "universe" / "csi300_membership.csv",
            start="2023-01-01",
            end="2024-12-31",
        )
    )
    return out


@pytest.fixture(scope="session")
def us_dataset_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TSLA, SPY, NVDA and AAPL 2020-2024 (adjusted-only prices), SPY as the index."""
    from tradebench.data.importers.long import LongImport, import_long

    out = tmp_path_factory.mktemp("us") / "us"
    import_long(
        LongImport(
            source=shared_data / "us" / "sp500_daily_adj_2005_2025.parquet",
            out=out,
            market="us",
            index_symbol="SPY",
            symbols=("AAPL", "TSLA", "NVDA", "MSFT"),
            start="2020-01-01",
            end="2024-12-31",
        )
    )
    return out


@pytest.fixture(scope="session")
def synth_dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded synthetic A-share market (seed 0): needs no shared data."""
    from tradebench.data.synth import SynthConfig, synthesize

    out = tmp_path_factory.mktemp("synth") / "synth"
    synthesize(out, SynthConfig(seed=0))
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that starts a local model server runs on one xdist worker, and every
    other test runs on the worker of its module's other tests.

    llama.cpp's threads spin while they wait; two servers on a 2-core machine starve each
    other until a 2-second request takes minutes. `--dist loadgroup` (set in pyproject)
    sends one group to one worker, so at most one server is busy at a time. A module's
    fixtures (a run attacked in every mode and mask, a probe of two models) are built once
    per worker that runs one of its tests: one worker per module builds them once.
    """
    for item in items:
        if item.get_closest_marker("local_llm") is not None:
            item.add_marker(pytest.mark.xdist_group("local_model"))
        elif item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
