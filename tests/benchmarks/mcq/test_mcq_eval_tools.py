"""`mcq eval --mode with_tools` against a real loopback server and the real sandbox.

The scripted model runs code that reads bars.csv, then answers through the forced `answer`
tool; one question never submits a valid letter and falls back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick, question_of, wrong
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.eval.run import EvalSpec, run_eval
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.llm.types import ModelConfig

CODE = """import os
import pandas as pd
import pytest
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
        assert listing == "['bars.csv', 'main.py']"
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


ESCAPES = """
import os, socket
for name, attempt in [
    ("chmod", lambda: os.chmod({target!r}, 0o777)),
    ("unix", lambda: socket.socket(socket.AF_UNIX).connect({sock!r})),
]:
    try:
        attempt()
        print(name, "escaped")
    except OSError as exc:
        print(name, type(exc).__name__)
"""
FORK_INT80 = """
import ctypes, mmap
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(bytes([0xB8, 0x02, 0, 0, 0, 0xCD, 0x80, 0xC3]))
print([ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()
       for _ in range(40)])
"""


def test_with_tools_model_code_cannot_escape(base_pool: BuildResult, tmp_path: Path) -> None:
    """An adversarial model, end to end: its code tries a host chmod, a host Unix socket and
    forks through the 32-bit ABI; each fails and the evaluation carries on."""
    import platform
    import socket
    import stat
    import tempfile

    if platform.machine() != "x86_64":
        pytest.skip("the fork attack is x86-64 machine code")
    host = Path(tempfile.mkdtemp(prefix="tb-host-", dir="/tmp"))
    host.chmod(0o777)
    target = host / "settings.txt"
    target.write_text("host")
    target.chmod(0o644)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(host / "agent.sock"))
    (host / "agent.sock").chmod(0o777)
    server.listen(1)
    server.setblocking(False)
    records = pick(base_pool, ["easy"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    attacks = [ESCAPES.format(target=str(target), sock=str(host / "agent.sock")), FORK_INT80]

    def respond(request: RecordedRequest) -> Reply:
        done = len(_tool_messages(request))
        if done < len(attacks):
            return Reply.tool("run_python", {"code": attacks[done]})
        return Reply.tool("answer", {"letter": records[0].answer})

    config = ModelConfig(provider="openai", model="adversary", max_tokens=300)
    try:
        with LoopbackServer(responder=respond) as server_http:
            spec = EvalSpec(
                models=(config.model_copy(update={"base_url": server_http.openai_url}),),
                mode="with_tools",
                sandbox_timeout_s=20,
            )
            outcome = run_eval(path, spec, tmp_path / "out", report=False)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    finally:
        server.close()
    results = [
        json.loads(m["content"])
        for m in _tool_messages(server_http.requests[-1])
        if m["content"].startswith('{"exit_code"')
    ]
    escapes, fork = results
    assert escapes["stdout"].split() == ["chmod", "PermissionError", "unix", "PermissionError"]
    assert fork["exit_code"] == -31 and fork["stdout"] == ""  # SIGSYS: no process was made
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    layers = outcome.summary.sandbox_layers or []
    identity = "unprivileged-uid" if os.geteuid() == 0 else "user-namespace"
    for layer in (identity, "pid-namespace", "syscall-filter", "disk-cap"):
        assert any(x.startswith(layer) for x in layers), layers
    rows = pd.read_parquet(outcome.results)
    assert list(rows["correct"]) == [True] and list(rows["tool_calls"]) == [2]


WITHOUT_LANDLOCK = """
import ctypes, sys
# answer Landlock's syscalls with ENOSYS, as a kernel without Landlock does
ins = [(0x20, 0, 0, 0), (0x35, 0, 3, 444), (0x35, 2, 0, 447), (0x06, 0, 0, 0x00050000 | 38),
       (0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x7FFF0000)]
class F(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]
class P(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(F))]
arr = (F * len(ins))(*[F(*i) for i in ins])
libc = ctypes.CDLL(None)
assert libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, ctypes.byref(P(len(ins), arr))) == 0
from tradebench.cli import app
sys.argv = ["tradebench", *sys.argv[1:]]
app()
"""


def test_with_tools_refuses_in_one_line_where_code_cannot_be_confined(
    base_pool: BuildResult, tmp_path: Path
) -> None:
    import subprocess
    import sys

    records = pick(base_pool, ["easy"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    env = {k: v for k, v in os.environ.items() if k != "TRADEBENCH_SANDBOX_ALLOW_WEAK"}
    with LoopbackServer(responder=lambda r: Reply.say("A")) as server:
        args = [str(path), "--model", "openai:m", "--base-url", server.openai_url]
        args += ["--mode", "with_tools", "-o", str(tmp_path / "out"), "--no-report"]
        cmd = [sys.executable, "-c", WITHOUT_LANDLOCK, "mcq", "eval", *args]
        refused = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert server.requests == []  # refused before any model call
        allowed = subprocess.run([*cmd, "--allow-weak-sandbox"], capture_output=True, env=env)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), refused.stderr
    assert "filesystem(landlock" in lines[0] and "--allow-weak-sandbox" in lines[0]
    assert allowed.returncode == 0, allowed.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert not any(x.startswith("filesystem") for x in summary["sandbox_layers"])
