"""Single-stock seeds are samples: each reaches the model as its seed and keys the cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd

from tests.benchmarks.single_stock.conftest import spec_dict
from tradebench.benchmarks import run_spec
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.runs.spec import RunSpec


def sampler(request: RecordedRequest) -> Reply:
    """Seed 1 buys, seed 0 sells: the answer depends on the sampling seed alone."""
    action = "buy" if request.body.get("seed") == 1 else "sell"
    args = {"action": action, "reason": "a sampled decision for the day", "confidence": 0.5}
    return Reply.tool("submit_decision", args)


def test_seeds_reach_the_model_and_the_cache(ss_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=sampler) as server:
        spec = spec_dict(
            ss_dataset_dir, server.openai_url, symbols=["TSLA"], personas=["adaptive"],
            episode_length=4,
        )  # fmt: skip
        spec["agents"], spec["seeds"], spec["masks"] = spec["agents"][:1], [0, 1], ["bright"]
        spec["agents"][0]["temperature"] = 0.7
        summary = pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path)))
        requests = list(server.requests)
    assert sorted(r.body["seed"] for r in requests) == [0] * 4 + [1] * 4
    cache = ResponseCache(tmp_path / "cache.sqlite")
    assert len(cache) == len(requests) == 8
    cache.close()
    returns = summary.set_index("seed")["total_return"]
    assert returns[0] != returns[1]  # a long and a short episode over the same days
