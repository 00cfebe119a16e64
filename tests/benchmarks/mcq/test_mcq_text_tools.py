"""`mcq eval --mode with_tools` against a server that refuses tool schemas: the solver
falls back to plain text (a fenced program, run in the question's workspace, its result
in the next message, then an `Answer: X` line), through the CLI on a loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.benchmarks.mcq.test_mcq_eval_no_tools import question_of, questions  # noqa: F401
from tradebench.cli.mcq import app
from tradebench.errors import SandboxUnavailable
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.sandbox import SandboxLimits
from tradebench.sandbox.run import sandbox_preflight

PROGRAM = "import pandas as pd\nprint(len(pd.read_csv('bars.csv')) * 0 + 6 * 7)\n"


def test_a_server_without_tools_gets_the_text_protocol(questions, tmp_path: Path) -> None:  # noqa: F811
    try:
        sandbox_preflight(SandboxLimits())
    except SandboxUnavailable as exc:
        pytest.skip(f"no confining sandbox here: {exc}")
    path, records = questions

    def no_tools(request: RecordedRequest) -> Reply:
        if "tools" in request.body:
            return Reply.error(400, body='{"error": "this model does not support tools"}')
        record = question_of(request, records)
        last = request.body["messages"][-1]
        if last["role"] == "user" and last["content"].startswith("Program result:"):
            result = json.loads(last["content"].removeprefix("Program result: "))
            letter = record.answer if result["stdout"].strip() == "42" else "Z"
            return Reply.say(f"The program printed 42.\nAnswer: {letter}")
        return Reply.say(f"Let me compute it.\n```python\n{PROGRAM}```")

    with LoopbackServer(responder=no_tools) as server:
        args = ["eval", str(path), "--model", "openai:plain", "--base-url", server.openai_url]
        args += ["--mode", "with_tools", "--limit", "2", "--concurrency", "1"]
        result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "o")])
        bodies = [r.body for r in server.requests]
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(tmp_path / "o" / "results.parquet")
    assert list(rows["question_id"]) == [r.id for r in records[:2]]
    assert rows["correct"].all() and (rows["tool_calls"] == 1).all()
    assert (rows["model_calls"] == 2).all()
    assert any("tools" in b for b in bodies)  # the tools were offered first
    plain = [b for b in bodies if "tools" not in b]
    assert len(plain) == 4 and all("```python" in b["messages"][0]["content"] for b in plain)
