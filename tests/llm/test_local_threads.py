"""The local server computes with the threads it is given, while reading a prompt too.

llama-cpp-python's server takes `--n_threads` for generating only; reading a prompt (its
batch path) gets every core unless `--n_threads_batch` is also given. A test server meant
to use one core then competed with the other test worker, and `tradebench demo --threads
1` still read its prompts on every core. The oracle is the kernel's own account: the CPU
time of each of the server's threads (/proc/PID/task/*/stat) across one long prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.llm.bundled import bundled_or_skip
from tradebench.llm.local import LocalServer

pytestmark = pytest.mark.local_llm

TICKS = 100  # clock ticks per second of /proc's utime and stime (USER_HZ on Linux)


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of each thread of process `pid`, by thread id."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
        out[task.name] = (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime
    return out


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
def test_a_prompt_is_read_on_the_one_thread_given() -> None:
    with LocalServer(bundled_or_skip("smollm2"), n_ctx=2048, n_threads=1) as server:
        assert server.pid is not None
        before = thread_cpu(server.pid)
        server.reading_speed(prompt_words=300)  # about 600 tokens, 8 generated
        after = thread_cpu(server.pid)
    spent = {t: after[t] - before.get(t, 0.0) for t in after}
    total = sum(spent.values())
    working = sorted((s for s in spent.values() if s >= 0.15 * total), reverse=True)
    assert total > 1.0, spent  # the prompt really was read here
    assert len(working) == 1, f"{len(working)} threads did the work: {spent}"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
def test_serve_local_threads_reach_the_server(tmp_path: Path) -> None:
    """`tradebench llm serve-local --threads 1`, a real process: its server reads a prompt on
    one thread (the option, through the CLI, to the server's own threads)."""
    import signal
    import subprocess
    import sys
    import time

    import httpx

    from tradebench.llm.local import free_port

    bundled_or_skip("smollm2")
    port = free_port()
    cmd = [sys.executable, "-m", "tradebench.cli", "llm", "serve-local", "--threads", "1"]
    cli = subprocess.Popen(
        [*cmd, "--port", str(port), "--log", str(tmp_path / "server.log")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = cli.stdout.readline() if cli.stdout else ""
        assert "on 1 thread(s)" in line, line
        children = Path(f"/proc/{cli.pid}/task/{cli.pid}/children").read_text().split()
        (server,) = [int(pid) for pid in children]
        before = thread_cpu(server)
        words = " ".join(f"w{i % 97}" for i in range(300))
        body = {"messages": [{"role": "user", "content": words}], "max_tokens": 8}
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        assert httpx.post(url, json=body, timeout=300).status_code == 200
        after = thread_cpu(server)
    finally:
        cli.send_signal(signal.SIGTERM)  # serve-local stops on it; SIGINT may be ignored
        deadline = time.monotonic() + 60
        while cli.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        cli.kill()
    spent = {t: after[t] - before.get(t, 0.0) for t in after}
    total = sum(spent.values())
    working = [s for s in spent.values() if s >= 0.15 * total]
    assert total > 1.0 and len(working) == 1, spent
