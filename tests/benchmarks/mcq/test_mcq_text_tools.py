"""`mcq eval --mode with_tools` against a server that refuses tool schemas: the solver
falls back to plain text (a fenced program, run in the question's workspace, its result
in the next message, then an `Answer: X` line), through the CLI on a loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner, Result

from tests.benchmarks.mcq.test_mcq_eval_no_tools import question_of, questions  # noqa: F401
from tradebench.benchmarks.mcq.records import MCQRecord
from tradebench.cli.mcq import app
from tradebench.errors import SandboxUnavailable
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply, Responder
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


def _confining_sandbox() -> None:
    try:
        sandbox_preflight(SandboxLimits())
    except SandboxUnavailable as exc:
        pytest.skip(f"no confining sandbox here: {exc}")


def _text_protocol(records: list[MCQRecord]) -> Responder:
    """Answers a text-protocol request: a program first, then the letter it proves."""

    def answer(request: RecordedRequest) -> Reply:
        record = question_of(request, records)
        last = request.body["messages"][-1]
        if last["role"] == "user" and last["content"].startswith("Program result:"):
            result = json.loads(last["content"].removeprefix("Program result: "))
            letter = record.answer if result["stdout"].strip() == "42" else "Z"
            return Reply.say(f"The program printed 42.\nAnswer: {letter}")
        return Reply.say(f"Let me compute it.\n```python\n{PROGRAM}```")

    return answer


def _tools_eval(path: Path, url: str, out: Path, *extra: str) -> Result:
    args = ["eval", str(path), "--model", "openai:grammar", "--base-url", url]
    args += ["--mode", "with_tools", "--limit", "2", "--concurrency", "1", *extra]
    return CliRunner().invoke(app, [*args, "-o", str(out)])


def test_a_server_that_drops_tool_requests_gets_the_text_protocol_once(
    questions,  # noqa: F811
    tmp_path: Path,
) -> None:
    # llama.cpp's server can close the connection on a tool schema whose grammar it cannot
    # build: here every request that carries tools loses its connection
    _confining_sandbox()
    path, records = questions
    text = _text_protocol(records)

    def grammar_crash(request: RecordedRequest) -> Reply:
        return Reply.drop() if "tools" in request.body else text(request)

    with LoopbackServer(responder=grammar_crash) as server:
        result = _tools_eval(path, server.openai_url, tmp_path / "o", "--max-attempts", "2")
        bodies = [r.body for r in server.requests]
        replies = [r.reply for r in server.requests]
    assert result.exit_code == 0, result.output
    # the first question's tools request took its two attempts, both dropped; the second
    # question sent no tools request at all
    with_tools = [i for i, b in enumerate(bodies) if "tools" in b]
    assert with_tools == [0, 1] and replies[:2] == ["drop", "drop"]
    assert all(question_of(server.requests[i], records) == records[0] for i in with_tools)
    plain = [b for b in bodies if "tools" not in b]
    assert len(plain) == 4 and all("```python" in b["messages"][0]["content"] for b in plain)
    rows = pd.read_parquet(tmp_path / "o" / "results.parquet")
    assert list(rows["question_id"]) == [r.id for r in records[:2]]
    assert list(rows["text_fallback"]) == ["dropped", "dropped before"]
    assert rows["correct"].all() and (rows["tool_calls"] == 1).all()
    (model,) = json.loads((tmp_path / "o" / "summary.json").read_text())["models"]
    assert model["text_fallbacks"] == {"dropped": 1, "dropped before": 1}
    assert "2 attempts answered over plain text" in result.output


def test_a_transient_drop_is_retried_not_a_fallback(questions, tmp_path: Path) -> None:  # noqa: F811
    # one dropped connection on a request with tools, then the server answers: the retry
    # gets the reply and the tools stay in use
    _confining_sandbox()
    path, _ = questions
    with LoopbackServer(script=[Reply.drop()]) as server:
        result = _tools_eval(path, server.openai_url, tmp_path / "o", "--max-attempts", "2")
        first, second = server.requests[:2]
    assert result.exit_code == 0, result.output
    assert first.reply == "drop" and second.reply != "drop"
    assert first.body == second.body and "tools" in second.body
    rows = pd.read_parquet(tmp_path / "o" / "results.parquet")
    assert list(rows["text_fallback"]) == ["", ""] and rows["parsed"].all()
    (model,) = json.loads((tmp_path / "o" / "summary.json").read_text())["models"]
    assert model["text_fallbacks"] == {}


def test_a_dropped_text_request_is_retried_as_before(questions, tmp_path: Path) -> None:  # noqa: F811
    # a server without tools (HTTP 400 naming them) whose first text request loses its
    # connection once: that request is sent again and answered, nothing else changes
    _confining_sandbox()
    path, records = questions
    text = _text_protocol(records)
    dropped: list[int] = []

    def refuses_then_drops_once(request: RecordedRequest) -> Reply:
        if "tools" in request.body:
            return Reply.error(400, body='{"error": "this model does not support tools"}')
        if not dropped:
            dropped.append(1)
            return Reply.drop()
        return text(request)

    with LoopbackServer(responder=refuses_then_drops_once) as server:
        result = _tools_eval(path, server.openai_url, tmp_path / "o", "--max-attempts", "2")
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    plain = [r for r in requests if "tools" not in r.body]
    assert [r.reply for r in plain[:2]] == ["drop", "text"] and plain[0].body == plain[1].body
    # both questions offered tools first (a refusal is not remembered), then 2 text
    # requests each, plus the one retried
    assert sum("tools" in r.body for r in requests) == 2 and len(plain) == 5
    rows = pd.read_parquet(tmp_path / "o" / "results.parquet")
    assert list(rows["text_fallback"]) == ["refused", "refused"] and rows["correct"].all()
