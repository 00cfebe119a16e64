"""A seed is a sample: it reaches the model as the provider seed and keys the cache, so two
seeds never share a reply, every cell has two distinct samples, and replay gives both."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import spec_dict
from tradebench.benchmarks import build_report, run_spec
from tradebench.cli import app
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.masking import MASK_LEVELS
from tradebench.runs.spec import RunSpec

ID = re.compile(r"\b(asset_\d{4,}|S[HZ]\d{6})\b")


def sampler(request: RecordedRequest) -> Reply:
    """A model whose answer depends on its sampling seed: seed 1 buys the first listed
    stock, seed 0 holds."""
    hold = {"orders": [], "overall_reason": "no basis to trade today"}
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    if request.body.get("seed") != 1 or not (found := ID.search(user)):
        return Reply.tool("submit_action", hold)
    order = {"stock_id": found.group(1), "side": "BUY", "target_weight": 0.2}
    order |= {"confidence": 0.6, "reason": "the first listed name"}
    why = "a sampled buy of the first listed name"
    return Reply.tool("submit_action", {"orders": [order], "overall_reason": why})


def _spec(dataset: Path, url: str, temperature: float) -> dict:
    spec = spec_dict(dataset, url, list(MASK_LEVELS), ["memory_only"], [0, 1], "2024-03-04")
    spec["agents"][0]["temperature"] = temperature
    return spec


def test_two_seeds_are_two_samples_in_every_cell(cn_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=sampler) as server:
        spec = _spec(cn_dataset_dir, server.openai_url, temperature=0.7)
        summary = pd.read_parquet(
            asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        )
        requests = list(server.requests)
    assert {r.body["seed"] for r in requests} == {0, 1}
    steps = 2 * len(MASK_LEVELS) * 2  # seeds x masks x decision days
    assert len(requests) == steps
    cache = ResponseCache(tmp_path / "run" / "cache.sqlite")
    assert len(cache) == steps  # no seed was answered from another seed's reply
    cache.close()
    # the bright first step: real codes and the real decision day (date_blind hides the day;
    # requests arrive in any order, so select by content, never by position)
    first_bright = [
        r.body
        for r in requests
        if "SH600" in json.dumps(r.body) and "Decision day 2024-03-01" in json.dumps(r.body)
    ]
    first = {b["seed"]: b for b in first_bright}
    assert len(first_bright) == 2 and set(first) == {0, 1}
    assert first[0]["messages"] == first[1]["messages"]  # same prompt, two samples
    llm = summary[summary["kind"] == "llm"]
    for mask, cell in llm.groupby("mask"):
        assert len(cell) == 2 and cell["total_return"].nunique() == 2, mask

    spec["cache"] = {"mode": "replay", "path": str(tmp_path / "run" / "cache.sqlite")}
    spec["agents"][0]["base_url"] = "http://127.0.0.1:9/v1"  # nothing answers there
    replayed = pd.read_parquet(
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "replay"))
    )
    pd.testing.assert_frame_equal(replayed, summary)


def test_greedy_seeds_are_flagged_on_screen_and_in_the_report(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=sampler) as server:
        spec = _spec(cn_dataset_dir, server.openai_url, temperature=0.0)
        assert len(RunSpec.model_validate(spec).sampling_warnings()) == 1
        spec["masks"] = ["bright"]
        path = tmp_path / "spec.json"
        path.write_text(json.dumps(spec))
        result = CliRunner().invoke(app, ["run", str(path), "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "warning: agent 'scripted' runs 2 seeds at temperature 0" in result.output
    html = build_report(tmp_path / "run").read_text()
    assert "2 (T=0)" in html and "only reshuffle the masks" in html
    spec["agents"][0]["temperature"] = 0.5
    assert RunSpec.model_validate(spec).sampling_warnings() == []
