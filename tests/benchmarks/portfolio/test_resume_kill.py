"""Kill a run mid-episode (SIGKILL), rerun the same command: same summary as a clean run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tradebench.benchmarks import run_spec
from tradebench.llm.loopback import LoopbackServer
from tradebench.runs.spec import RunSpec


def _progress_lines(run: Path) -> int:
    return sum(
        len(p.read_text().splitlines())
        for p in (run / "episodes").glob("scripted_*/progress.jsonl")
    )


def test_killed_run_resumes_to_identical_summary(cn_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=trader, latency_s=0.05) as server:
        spec = spec_dict(
            cn_dataset_dir,
            server.openai_url,
            ["blinded", "bright"],
            ["fixed_candidate", "open_research"],
        )
        spec["concurrency"] = 2
        spec_file = tmp_path / "spec.yaml"
        spec_file.write_text(yaml.safe_dump(spec))
        killed = tmp_path / "killed"
        proc = subprocess.Popen(
            [sys.executable, "-m", "tradebench.cli", "run", str(spec_file), "-o", str(killed)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ},
        )
        # kill only once some steps are checkpointed (a kill before the first would test
        # nothing); waiting is bounded by the run itself, not by a clock
        while _progress_lines(killed) < 3:
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert _progress_lines(killed) >= 3 and not (killed / "summary.parquet").exists()
        loaded = RunSpec.model_validate(spec)
        resumed = pd.read_parquet(asyncio.run(run_spec(loaded, killed)))
        clean = pd.read_parquet(asyncio.run(run_spec(loaded, tmp_path / "clean")))
    pd.testing.assert_frame_equal(resumed, clean)
    for ep in clean["episode_id"]:
        for name in ("steps.parquet", "orders.parquet", "positions.parquet"):
            a = pd.read_parquet(killed / "episodes" / ep / name)
            b = pd.read_parquet(tmp_path / "clean" / "episodes" / ep / name)
            pd.testing.assert_frame_equal(a, b)
