"""`mcq eval --mode with_tools` runs to completion against every endpoint personality of
the loopback server, and its summary counts the steps down the forced-call ladder.

The oracle is the endpoints' behaviour: the forms of `tool_choice` each one refuses or
ignores before one works, counted once (the working form is kept for later questions;
one question at a time, so the count does not depend on arrival order), plus the research
call's `auto` where even that is refused. The personality answers the forced `answer` tool
with the first letter of its enum, `A`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.eval.run import EvalSpec, run_eval
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.llm.loopback import LoopbackServer, RateLimit
from tradebench.llm.types import ModelConfig

STEPS_DOWN = {
    "none": 0,
    "object_choice_rejected": 1,  # object refused: required works
    "object_choice_ignored": 1,  # object ignored: required works
    "none_auto_only": 2,  # object and required refused: auto with an instruction
    "choice_ignored": 2,  # object and required ignored
    "choice_rejected": 3,  # research's auto, then object and required refused
    "text_only": 3,  # no native call in any form: the text protocol
    "reasoning": 0,
    "cached_usage": 0,
}


def _eval(path: Path, out: Path, server: LoopbackServer) -> dict:
    config = ModelConfig(provider="openai", model="m", max_tokens=300, base_url=server.openai_url)
    spec = EvalSpec(models=(config,), mode="with_tools", concurrency=1, sandbox_timeout_s=20)
    run_eval(path, spec, out, report=False)
    return json.loads((out / "summary.json").read_text())["models"][0]


@pytest.mark.parametrize("personality", sorted(STEPS_DOWN))
def test_every_personality_completes_and_its_fallbacks_are_counted(
    personality: str, base_pool: BuildResult, tmp_path: Path
) -> None:
    records = pick(base_pool, ["easy", "medium"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    quirks = [] if personality == "none" else [personality]
    with LoopbackServer(quirks=quirks) as server:  # type: ignore[arg-type]
        summary = _eval(path, tmp_path / "out", server)
    rows = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert rows["parsed"].all() and list(rows["letter"]) == ["A", "A"]
    assert summary["overall"]["attempts"] == 2 and summary["unparseable"] == 0
    assert summary["tool_choice_fallbacks"] == STEPS_DOWN[personality]
    assert int(rows["tool_choice_fallbacks"].sum()) == STEPS_DOWN[personality]


@pytest.mark.parametrize("retry_after", [True, False])
def test_a_rate_limited_endpoint_completes(
    retry_after: bool, base_pool: BuildResult, tmp_path: Path
) -> None:
    records = pick(base_pool, ["easy", "medium", "hard"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    limit = RateLimit(requests=2, window_s=0.5, retry_after=retry_after)
    with LoopbackServer(rate_limit=limit) as server:
        summary = _eval(path, tmp_path / "out", server)
        refused = server.limited
    assert refused >= 1  # the limit was met and every question still answered
    assert summary["overall"]["attempts"] == 3 and summary["unparseable"] == 0
