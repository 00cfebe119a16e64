"""The portfolio benchmark against a real model server (llama.cpp + a bundled tiny model).

Asserts the plumbing, not the model's wisdom: every step ends with a submission or the
fallback, counts are recorded, nothing real leaks under the blinded mask, and a submission
forced under the schema's grammar fits its reply and matches the schema in all but the
number ranges a grammar cannot enforce (which our checks refuse with their code).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from jsonschema import Draft202012Validator

from tests.leak_scan import find_leaks
from tests.llm.test_llm_local_model import TEST_THREADS
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.portfolio.submit_schema import SubmitLimits, action_schema
from tradebench.data import load_dataset
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_bytes, trace_lines

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(
        not llama_cpp_available(),
        reason="needs the local-llm extra (pip install -e '.[local-llm]'): llama-cpp-python",
    ),
]


def test_open_research_blinded_with_local_model(synth_dataset_dir: Path, tmp_path: Path) -> None:
    with LocalServer(find_bundled_model(), n_ctx=8192, n_threads=TEST_THREADS) as server:
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
    trace = trace_lines(folder)
    assert len(trace) == 2
    for step in trace:
        assert step["stop_reason"] in {"submitted", "fallback"}
        assert (step["submitted"] is None) == step["fallback"]
    ds = load_dataset(synth_dataset_dir)
    text = trace_bytes(folder).decode()
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates, True, True) == []


def _without_ranges(node: Any) -> Any:
    """A schema with `minimum`/`maximum` dropped (llama.cpp's grammar ignores them)."""
    if isinstance(node, dict):
        return {k: _without_ranges(v) for k, v in node.items() if k not in ("minimum", "maximum")}
    if isinstance(node, list):
        return [_without_ranges(v) for v in node]
    return node


UNENFORCEABLE = {"OUT_OF_RANGE", "SELL_AFTER_BUY"}
"""The refusals a grammar cannot prevent: number ranges and the order of sides."""


@pytest.mark.slow
def test_grammar_forced_submissions_fit_and_match_the_schema(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    with LocalServer(find_bundled_model(), n_ctx=8192, n_threads=TEST_THREADS) as server:
        spec = RunSpec.model_validate(
            {
                "dataset": str(synth_dataset_dir),
                "windows": [{"start": "2022-03-01", "end": "2022-03-01"}],
                "modes": ["fixed_candidate"],
                "masks": ["blinded"],
                "seeds": [0],
                "agents": [
                    {
                        "name": "tiny",
                        "provider": "openai",
                        "model": server.alias,
                        "base_url": server.base_url,
                        "max_tokens": 300,
                        "timeout_s": 600,  # a shared CPU: one reply may take minutes
                    }
                ],
                "options": {"max_submit_retries": 0, "candidates_k": 3},
            }
        )
        summary = pd.read_parquet(asyncio.run(run_spec(spec, tmp_path / "run")))
    row = summary[summary["kind"] == "llm"].iloc[0]
    (step,) = trace_lines(tmp_path / "run" / "episodes" / row["episode_id"])
    user = next(m["content"] for m in step["messages"] if m["role"] == "user")
    table = sorted(set(re.findall(r"^\| (asset_\d+) \|", user, flags=re.MULTILINE)))
    shown = action_schema(table, [], SubmitLimits.for_tokens(300))  # nothing held on day 1
    grammar = Draft202012Validator(_without_ranges(shown))
    submits = [c for c in step["tool_calls"] if c["name"] == "submit_action"]
    assert submits and all(c["phase"] == "submit" for c in step["model_calls"])
    assert all(c["finish_reason"] != "length" for c in step["model_calls"])  # nothing cut off
    for call in submits:
        assert call["raw_arguments"].lstrip("{ ").startswith('"orders"')  # orders first
        assert list(grammar.iter_errors(call["arguments"])) == [], call["raw_arguments"]
        codes = re.findall(r"orders/\d+: \[([A-Z_]+)\]", call["error"] or "")
        assert call["valid"] or (codes and set(codes) <= UNENFORCEABLE), call["error"]
