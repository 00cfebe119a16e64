"""Fixtures: a planted-factor market and a real baseline run folder on CSI300 data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.attribution.planted import PlantedMarket, build_planted_market

REAL_START, REAL_END = "2024-07-01", "2024-09-30"
REAL_BASELINES = (("mom", "momentum_topk", {"k": 30, "every": 5}), ("ew", "equal_weight", {}))


@pytest.fixture(scope="session")
def planted(tmp_path_factory: pytest.TempPathFactory) -> PlantedMarket:
    """The planted-factor market (seeded), generated once per session."""
    return build_planted_market(tmp_path_factory.mktemp("planted") / "market")


@pytest.fixture(scope="session")
def real_run(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder with real baseline episodes (momentum top-k, equal weight) on CSI300
    members over 2024-07-01 .. 2024-09-30, as the runner lays it out."""
    from tradebench.runs.broker.backtest import BacktestRequest, backtest_to_folder

    run_dir = tmp_path_factory.mktemp("realrun")
    for name, agent, args in REAL_BASELINES:
        folder = run_dir / "episodes" / f"{name}_s0"
        request = BacktestRequest(
            cn_dataset_dir, agent, REAL_START, REAL_END, folder, agent_args=args
        )
        backtest_to_folder(request)
        meta = {
            "agent": name,
            "kind": "baseline",
            "mode": "n/a",
            "mask": "n/a",
            "seed": 0,
            "window": {"start": REAL_START, "end": REAL_END},
            "status": "done",
            "baseline": {"name": agent, "args": args},
        }
        (folder / "episode.json").write_text(json.dumps(meta))
    return run_dir
