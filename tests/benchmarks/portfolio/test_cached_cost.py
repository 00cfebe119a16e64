"""An episode's `cost_usd` prices the input tokens read from the provider's prompt cache at
the cache-read rate: a short portfolio run against the loopback personality that reports
cached-prompt usage, priced from the spec's own table.

The oracle prices every model call of the episode's trace by hand: fresh input tokens at
the input rate, cached ones at the cache-read rate, output tokens at the output rate.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict
from tradebench.benchmarks import run_spec
from tradebench.llm.loopback import LoopbackServer
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines

RATES = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "cache_read_per_mtok": 0.5}


def test_cached_input_tokens_pay_the_cache_rate(synth_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(quirks=["cached_usage"]) as server:
        spec = spec_dict(synth_dataset_dir, server.openai_url, ["blinded"], ["memory_only"])
        spec["agents"] = spec["agents"][:1]
        spec["windows"] = [{"start": "2024-02-01", "end": "2024-02-05"}]
        spec["budget"] = {"prices": {"openai:test-model": RATES}}
        summary = pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path)))
    folder = next((tmp_path / "episodes").glob("scripted_*"))
    calls = [c for line in trace_lines(folder) for c in line["model_calls"]]
    fresh = sum(c["usage"]["input_tokens"] - c["usage"]["cached_input_tokens"] for c in calls)
    cached = sum(c["usage"]["cached_input_tokens"] for c in calls)
    out = sum(c["usage"]["output_tokens"] for c in calls)
    assert cached > 0  # the personality reported cache reads
    expected = (fresh * 2.0 + cached * 0.5 + out * 8.0) / 1e6
    undiscounted = ((fresh + cached) * 2.0 + out * 8.0) / 1e6
    episode = json.loads((folder / "episode.json").read_text())
    assert episode["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert episode["cost_usd"] < undiscounted
    assert summary.loc[summary["kind"] == "llm", "cost_usd"].tolist() == [
        pytest.approx(expected, rel=1e-9)
    ]
    steps = pd.read_parquet(folder / "steps.parquet")
    assert steps["cost_usd"].sum() == pytest.approx(expected, rel=1e-9)
