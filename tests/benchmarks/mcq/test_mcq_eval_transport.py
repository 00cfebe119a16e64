"""`mcq eval` through the CLI: the accuracy it prints is the summary file's, its HTTP
timeout and attempts are the user's, and a dead endpoint is one line at once."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from tests.benchmarks.mcq.test_mcq_eval_no_tools import questions  # noqa: F401 (fixture)
from tradebench.cli.mcq import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply

runner = CliRunner()


def _eval(path: Path, url: str, out: Path, *extra: str):
    args = ["eval", str(path), "--model", "openai:scripted", "--base-url", url]
    return runner.invoke(app, [*args, "--mode", "no_tools", "-o", str(out), *extra])


def test_printed_accuracy_is_the_summarys(questions, tmp_path: Path) -> None:  # noqa: F811
    path, records = questions
    keys = {r.question: r.answer for r in records}

    def half_right(request: RecordedRequest) -> Reply:
        user = next(m for m in request.body["messages"] if m["role"] == "user")
        key = next(a for q, a in keys.items() if q in user["content"])
        right = sum(ord(c) for c in user["content"]) % 2 == 0
        return Reply.say(f"Answer: {key if right else 'A' if key != 'A' else 'B'}")

    with LoopbackServer(responder=half_right) as server:
        result = _eval(path, server.openai_url, tmp_path / "o")
    assert result.exit_code == 0, result.output
    (model,) = json.loads((tmp_path / "o" / "summary.json").read_text())["models"]
    slices = {"all": model["overall"], **model["tiers"]}
    for name, acc in slices.items():
        row = re.search(
            rf"│ {name}\s+│ ([\d.]+)\s+│[^│]*│ \[([\d.]+), ([\d.]+)\]",
            result.output,
        )
        assert row is not None, result.output
        expected = (f"{acc['mean']:.3f}", f"{acc['wilson_low']:.3f}", f"{acc['wilson_high']:.3f}")
        assert row.groups() == expected


def test_a_dead_endpoint_is_one_line_at_once(questions, tmp_path: Path) -> None:  # noqa: F811
    path, _ = questions
    result = _eval(path, "http://127.0.0.1:9/v1", tmp_path / "dead")
    # refused by the check before any request, not after the retries (their line says
    # "gave up after N attempts"); how long either takes is measured in perf/, not here
    assert result.exit_code == 1 and "gave up" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "connection refused" in lines[0]
    assert lines[0].startswith("error: endpoint http://127.0.0.1:9/v1 is not reachable")


def test_timeout_and_attempts_are_the_users(questions, tmp_path: Path) -> None:  # noqa: F811
    path, _ = questions
    with LoopbackServer(responder=lambda request: Reply.say("B", delay_s=3.0)) as server:
        extra = ("--timeout-s", "0.3", "--max-attempts", "2", "--limit", "1")
        result = _eval(path, server.openai_url, tmp_path / "slow", *extra)
        calls = server.count()
    assert result.exit_code == 1 and "gave up after 2 attempts" in result.output
    # each attempt ended at the 0.3 s timeout (the server answers after 3 s), not at 120 s
    assert calls == 2 and "last fault timeout" in result.output
