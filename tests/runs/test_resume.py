"""A crashed episode resumes where it stopped and ends identical to a clean run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from tradebench.agents.baselines import MomentumTopKAgent
from tradebench.benchmarks import run_spec
from tradebench.data import load_dataset
from tradebench.runs.broker.engine import run_backtest_sync
from tradebench.runs.journal import Journal
from tradebench.runs.records import PROGRESS_FILE as PROGRESS
from tradebench.runs.spec import RunSpec


class Crash(Exception):
    pass


@dataclass
class CrashingAgent:
    """Momentum top-k that dies on a chosen step (before deciding it)."""

    crash_at: int
    inner: MomentumTopKAgent
    name: str = "crashing"

    async def decide(self, view, account, step):
        if step.index == self.crash_at:
            raise Crash(f"killed at step {step.index}")
        return await self.inner.decide(view, account, step)


def _frames(result) -> list[pd.DataFrame]:
    return [result.steps, result.positions, result.orders]


@pytest.mark.parametrize("crash_at", [1, 4, 11])
def test_resume_after_crash_matches_clean_run(
    synth_dataset_dir: Path, tmp_path: Path, crash_at: int
) -> None:
    ds = load_dataset(synth_dataset_dir)
    agent = MomentumTopKAgent(k=15, every=3)
    clean = run_backtest_sync(ds, agent, "2022-03-01", "2022-03-31")
    folder = tmp_path / "ep"
    with pytest.raises(Crash):
        run_backtest_sync(
            ds,
            CrashingAgent(crash_at, agent),
            "2022-03-01",
            "2022-03-31",
            journal=Journal(folder),
        )
    progress = folder / PROGRESS
    lines = progress.read_text().splitlines() if progress.exists() else []
    assert len(lines) == crash_at - 1
    # a torn write at the moment of the kill is ignored
    with (folder / PROGRESS).open("a") as fh:
        fh.write('{"step": [')
    resumed = run_backtest_sync(ds, agent, "2022-03-01", "2022-03-31", journal=Journal(folder))
    for a, b in zip(_frames(clean), _frames(resumed), strict=True):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_rerun_of_finished_run_skips_everything(synth_dataset_dir: Path, tmp_path: Path) -> None:
    import asyncio

    spec = RunSpec.model_validate(
        {
            "dataset": str(synth_dataset_dir),
            "windows": [{"start": "2022-03-01", "end": "2022-03-15"}],
            "seeds": [0],
            "agents": [{"name": "ew", "baseline": "equal_weight"}],
        }
    )
    first = pd.read_parquet(asyncio.run(run_spec(spec, tmp_path / "run")))
    stamp = (
        (tmp_path / "run" / "episodes" / "ew_s0_20220301-20220315" / "steps.parquet")
        .stat()
        .st_mtime_ns
    )
    second = pd.read_parquet(asyncio.run(run_spec(spec, tmp_path / "run")))
    pd.testing.assert_frame_equal(first, second)
    assert (
        tmp_path / "run" / "episodes" / "ew_s0_20220301-20220315" / "steps.parquet"
    ).stat().st_mtime_ns == stamp
    assert set(first["kind"]) == {"benchmark", "baseline"}
