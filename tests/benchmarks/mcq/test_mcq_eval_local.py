"""`mcq eval --mode no_tools` against a real model server (llama.cpp with the bundled GGUF).

Plumbing only, not the model's skill: three real questions are accepted by a real
OpenAI-compatible server with one attempt each (any HTTP error fails), every reply is
either parsed or counted as unparseable, and the results are written. Skipped with a
reason when `llama_cpp` is not importable; the server fixture is the one of
tests/llm/test_llm_local_model.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick
from tests.llm.test_llm_local_model import ONE_SHOT, _config, local_server  # noqa: F401
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.eval.parse import parse_letter
from tradebench.benchmarks.mcq.eval.run import EvalSpec, run_eval
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.llm.local import LocalServer

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]


def test_no_tools_eval_on_a_real_local_model(
    local_server: LocalServer,  # noqa: F811
    base_pool: BuildResult,
    tmp_path: Path,
) -> None:
    records = pick(base_pool, ["easy", "medium", "hard"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    config = _config(local_server).model_copy(update={"max_tokens": 16})
    spec = EvalSpec(models=(config,), mode="no_tools", concurrency=1)
    outcome = run_eval(path, spec, tmp_path / "out", retry=ONE_SHOT)

    rows = pd.read_parquet(outcome.results)
    assert list(rows["question_id"]) == [r.id for r in records]
    assert (rows["model_calls"] == 1).all()
    assert (rows["input_tokens"] > 200).all()  # the whole question reached the server
    assert (rows["output_tokens"] <= 16).all()  # max_tokens reached the server
    for row in rows.itertuples():
        if row.refused_tool_call:
            continue
        assert row.letter == parse_letter(row.raw_reply) or (
            pd.isna(row.letter) and parse_letter(row.raw_reply) is None
        )
        assert row.parsed == (not pd.isna(row.letter))
        assert row.correct == (row.letter == row.answer)
    (summary,) = outcome.summary.models
    assert summary.unparseable + summary.refused_tool_calls == int((~rows["parsed"]).sum())
    written = json.loads(outcome.summary_path.read_text())
    assert written["models"][0]["overall"]["attempts"] == 3
    assert outcome.report is not None and outcome.report.exists()
