"""`mcq eval --mode with_tools` against a real loopback server and the real sandbox.

The scripted model runs code that reads bars.csv, then answers through the forced `answer`
tool; one question never submits a valid letter and falls back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick, question_of, wrong
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.eval.run import EvalSpec, run_eval
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.llm.types import ModelConfig

CODE = """import os
import pandas as pd
bars = pd.read_csv("bars.csv")
print(len(bars), f"{bars['close'].iloc[0]:.4f}")
print(sorted(os.listdir(".")))
print(os.getcwd())
open("scratch.txt", "w").write("left behind")
"""


def _tool_messages(request: RecordedRequest) -> list[dict]:
    return [m for m in request.body["messages"] if m["role"] == "tool"]


def test_with_tools_runs_code_in_a_fresh_sandbox_then_answers(
    base_pool: BuildResult, aapl, tmp_path: Path
) -> None:
    records = pick(base_pool, ["easy", "medium", "hard"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    letters = {records[0].id: records[0].answer, records[1].id: wrong(records[1])}

    def respond(request: RecordedRequest) -> Reply:
        record = question_of(request, records)
        if record.id not in letters:  # never a valid letter: falls back
            return (
                Reply.tool("answer", {"letter": "E"}) if request.forced_tool() else Reply.say("?")
            )
        if not _tool_messages(request):
            return Reply.tool("run_python", {"code": CODE})
        return Reply.tool("answer", {"letter": letters[record.id]})

    config = ModelConfig(provider="openai", model="scripted", max_tokens=300)
    with LoopbackServer(responder=respond) as server:
        spec = EvalSpec(
            models=(config.model_copy(update={"base_url": server.openai_url}),),
            mode="with_tools",
            concurrency=2,
            sandbox_timeout_s=20,
        )
        outcome = run_eval(path, spec, tmp_path / "out", report=False)
    requests = server.requests

    for request in requests:
        assert set(request.tool_schemas()) == {"run_python", "answer"}
        assert request.tool_schemas()["answer"]["properties"]["letter"]["enum"] == list("ABCD")
    _, bars = aapl
    results = [
        json.loads(m["content"])
        for r in requests
        for m in _tool_messages(r)
        if m["content"].startswith('{"exit_code"')
    ]
    assert len(results) == 2  # one run_python call for each of the two answering questions
    for result in results:
        assert result["exit_code"] == 0 and not result["timed_out"], result["stderr"]
        first, listing, cwd = result["stdout"].splitlines()
        assert first == f"{len(bars)} {bars['close'].iloc[0]:.4f}"
        # a fresh directory: the question's files only, never the other call's scratch file
        assert listing == "['.sandbox_enforced.json', 'bars.csv', 'main.py']"
        assert cwd == "."  # the random sandbox path is scrubbed, so reruns hit the cache

    rows = pd.read_parquet(outcome.results)
    assert list(rows["correct"]) == [True, False, False]
    assert list(rows["parsed"]) == [True, True, False]
    assert list(rows["tool_calls"]) == [1, 1, 0]
    assert list(rows["model_calls"]) == [2, 2, 4]  # fallback: research + 3 forced attempts
    assert pd.isna(rows["letter"].iloc[2]) and "answer" in rows["parse_error"].iloc[2]
    assert json.loads(rows["raw_reply"].iloc[0]) == {"letter": records[0].answer}
    transcript = json.loads(rows["transcript"].iloc[0])
    assert [m["role"] for m in transcript] == ["assistant", "tool", "assistant", "tool"]
    (summary,) = outcome.summary.models
    assert (summary.unparseable, summary.tool_calls, summary.overall.correct) == (1, 2, 1)
    assert outcome.summary.solver["name"] == "with_tools"
