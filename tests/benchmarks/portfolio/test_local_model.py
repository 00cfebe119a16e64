"""The portfolio benchmark against a real model server (llama.cpp + a bundled tiny model).

Asserts the plumbing, not the model's wisdom: every step ends with a submission or the
fallback, counts are recorded, nothing real leaks under the blinded mask, and a submission
forced under the schema's grammar fits its reply and matches the schema in all but the
number ranges a grammar cannot enforce (which our checks refuse with their code).
"""

from __future__ import annotations

import asyncio
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from jsonschema import Draft202012Validator

from tests.leak_scan import find_leaks
from tests.llm.test_llm_local_model import TEST_THREADS
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.portfolio.account_check import AccountCode
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


READ = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens")
CHOICE_LINE_TOKENS = 32
"""A retry's closing line ("In this reply you must call ...") is read again by the next."""


def _kept_and_read(log: Path) -> list[tuple[int, int]]:
    """(prompt tokens kept from the last request, tokens read) of each request, from
    llama.cpp's own log."""
    text = log.read_text(errors="replace")
    return [(int(kept), int(read)) for kept, read in READ.findall(text)]


def test_open_research_blinded_with_local_model(synth_dataset_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with LocalServer(
        find_bundled_model(), n_ctx=8192, n_threads=TEST_THREADS, log_path=log, verbose=True
    ) as server:
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
    # Every call of a step after its first reads only its new turns: research, the forced
    # submission that adds the submit tool, and each retry keep the last prompt (as the
    # server itself counts it; the run's calls are its last requests).
    calls = [len(step["model_calls"]) for step in trace]
    reads = _kept_and_read(log)[-sum(calls) :]
    assert len(reads) == sum(calls) and max(calls) >= 2, (calls, reads)
    first = 0
    for n in calls:
        step = reads[first : first + n]
        for (kept0, read0), (kept, _) in pairwise(step):
            assert kept >= kept0 + read0 - CHOICE_LINE_TOKENS, (calls, reads)
        first += n
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


UNENFORCEABLE = {"OUT_OF_RANGE", "SELL_AFTER_BUY", *(code.value for code in AccountCode)}
"""The refusals a grammar cannot prevent: number ranges, the order of sides and the checks
of the list as a whole against the account (a name twice, more sold than held, weights
past 100% of NAV)."""


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
