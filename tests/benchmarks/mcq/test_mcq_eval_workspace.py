"""With tools as the paper has it: one workspace per question, offline package installs, and
external coding-agent commands, each through `mcq eval` as a user runs it."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from tests.test_sandbox_workspace import tiny_wheel
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.eval.run import EvalSpec, run_eval
from tradebench.benchmarks.mcq.records import MCQRecord, write_jsonl
from tradebench.cli.mcq import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.llm.types import ModelConfig

HELPER = """def first_close(path):
    import csv
    with open(path) as fh:
        return float(next(csv.DictReader(fh))["close"])
"""


def _solver_file(record: MCQRecord) -> str:
    """A module that needs the installed package and prints the letter of the first close."""
    return (
        "import mcqhelp\n"
        "value = mcqhelp.first_close('bars.csv')\n"
        f"options = {dict(record.options)!r}\n"
        "print(next(k for k, v in options.items() if v == f'{value:,.2f}'))\n"
    )


def _results(request: RecordedRequest) -> list[dict]:
    return [json.loads(m["content"]) for m in request.body["messages"] if m["role"] == "tool"]


def test_a_question_solved_by_a_package_a_written_file_and_a_second_call(
    base_pool: BuildResult, tmp_path: Path
) -> None:
    """pip_install from a local wheel directory, then write solve.py, then import it in a
    second run_python call; the model submits the letter that call printed."""
    record = next(r for r in base_pool.records if r.template == "first_close")
    path = tmp_path / "q.jsonl"
    write_jsonl([record], path)
    wheels = tmp_path / "wheels"
    tiny_wheel(wheels, "mcqhelp", HELPER)
    write = f"open('solve.py', 'w').write({_solver_file(record)!r})\nprint('written')"
    plan = [
        Reply.tool("pip_install", {"packages": ["mcqhelp"]}),
        Reply.tool("run_python", {"code": write}),
        Reply.tool("run_python", {"code": "import solve"}),
    ]

    def respond(request: RecordedRequest) -> Reply:
        done = _results(request)
        if len(done) < len(plan):
            return plan[len(done)]
        return Reply.tool("answer", {"letter": done[-1]["stdout"].strip()})

    config = ModelConfig(provider="openai", model="scripted", max_tokens=300)
    with LoopbackServer(responder=respond) as server:
        spec = EvalSpec(
            models=(config.model_copy(update={"base_url": server.openai_url}),),
            mode="with_tools",
            wheels=str(wheels),
        )
        outcome = run_eval(path, spec, tmp_path / "out", report=False)
    final = server.requests[-1]
    assert set(final.tool_schemas()) == {"run_python", "pip_install", "answer"}
    installed, written, ran = _results(final)
    assert installed["exit_code"] == 0, installed
    assert "Successfully installed mcqhelp-0.1" in installed["stdout"]
    assert written["stdout"].strip() == "written"
    assert ran["exit_code"] == 0 and ran["stdout"].strip() == record.answer, ran["stderr"]
    rows = pd.read_parquet(outcome.results)
    assert list(rows["correct"]) == [True] and list(rows["tool_calls"]) == [3]
    assert outcome.summary.solver["args"]["wheels"] == str(wheels)


STAND_IN = """
import csv, re, sys
prompt = open(sys.argv[1]).read()
options = dict(re.findall(r"^([A-D])\\) (.*)$", prompt, re.M))
with open("bars.csv") as fh:
    value = float(next(csv.DictReader(fh))["close"])
letter = next(k for k, v in options.items() if v == f"{value:,.2f}")
print("working in", sys.argv[2])
print(f"Answer: {letter}")
"""


def test_a_scripted_agent_command_answers_through_mcq_eval(
    base_pool: BuildResult, tmp_path: Path
) -> None:
    """The stand-in is a command like any agent CLI: it reads the prompt file and bars.csv
    in its workspace (inside the sandbox) and prints its answer; a mute one is unparseable."""
    records = [r for r in base_pool.records if r.template == "first_close"][:3]
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    command = f"{sys.executable} -c {shlex.quote(STAND_IN)} {{prompt_file}} {{workdir}}"
    args = ["eval", str(path), "--mode", "agent", "--agent-command", command]
    result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "out"), "--no-report"])
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert list(rows["correct"]) == [True, True, True]
    assert list(rows["letter"]) == [r.answer for r in records]
    assert rows["model"].iloc[0].startswith("agent:python")
    record = json.loads(rows["transcript"].iloc[0])
    assert record["confined"] is True and record["exit_code"] == 0
    assert "working in /tmp/tb-sandbox-" in record["stdout"]  # ran in the sandbox's folder
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["solver"]["name"] == "agent_command"
    assert summary["models"][0]["overall"]["mean"] == 1.0

    mute = f"{sys.executable} -c {shlex.quote('print(42)')} {{prompt}}"
    args = ["eval", str(path), "--mode", "agent", "--agent-command", mute, "--limit", "1"]
    result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "mute"), "--no-report"])
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(tmp_path / "mute" / "results.parquet")
    assert not rows["parsed"].iloc[0] and "no answer letter" in rows["parse_error"].iloc[0]


def test_an_agent_runs_unconfined_on_request_and_is_stopped_at_its_time_limit(
    base_pool: BuildResult, tmp_path: Path
) -> None:
    """`--agent-unconfined`: the same command in a plain folder (a hosted agent needs its
    network); `--question-time` stops an agent that runs on, which is then unparseable."""
    record = next(r for r in base_pool.records if r.template == "first_close")
    path = tmp_path / "q.jsonl"
    write_jsonl([record], path)
    command = f"{sys.executable} -c {shlex.quote(STAND_IN)} {{prompt_file}} {{workdir}}"
    args = ["eval", str(path), "--mode", "agent", "--agent-command", command, "--no-report"]
    result = CliRunner().invoke(app, [*args, "--agent-unconfined", "-o", str(tmp_path / "u")])
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(tmp_path / "u" / "results.parquet")
    transcript = json.loads(rows["transcript"].iloc[0])
    assert transcript["confined"] is False and "working in /tmp/tb-agent-" in transcript["stdout"]
    assert list(rows["correct"]) == [True]

    slow = f"{sys.executable} -c {shlex.quote('import time; time.sleep(60)')} {{prompt}}"
    args = ["eval", str(path), "--mode", "agent", "--agent-command", slow, "--no-report"]
    result = CliRunner().invoke(app, [*args, "--question-time", "3", "-o", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(tmp_path / "s" / "results.parquet")
    assert not rows["parsed"].iloc[0] and rows["parse_error"].iloc[0] == "timed out"
    assert rows["latency_s"].iloc[0] < 20


def test_agent_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("")
    cases = [
        (["--agent", "nope"], "unknown agent 'nope'"),
        (["--agent-command", "mytool --fast"], "must take the prompt"),
        (["--agent", "codex", "--model", "openai:x"], "give no --model"),
        (["--agent", "codex", "--agent-command", "x {prompt}"], "not both"),
    ]
    for extra, message in cases:
        args = ["eval", str(path), "--mode", "agent", *extra, "-o", str(tmp_path / "o")]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1 and message in result.output, (extra, result.output)
