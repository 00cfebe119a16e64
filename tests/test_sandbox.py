"""The run_python sandbox: timeouts, memory, files, network, processes; the parent survives."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tradebench.sandbox import SandboxLimits, landlock_abi, run_python

needs_landlock = pytest.mark.skipif(landlock_abi() == 0, reason="kernel without Landlock")


def test_runs_code_with_its_files() -> None:
    result = run_python("print(open('bars.csv').read().strip())", files={"bars.csv": b"a,b\n1,2"})
    assert result.ok
    assert result.stdout.splitlines() == ["a,b", "1,2"]
    assert "rlimits" in result.enforced


def test_infinite_loop_is_killed_at_the_timeout() -> None:
    result = run_python("while True:\n    pass", limits=SandboxLimits(timeout_s=1.5, cpu_s=30))
    assert result.timed_out
    assert result.exit_code < 0
    assert result.seconds >= 1.4  # it ran until the timeout, then was killed


def test_cpu_limit_kills_even_without_timeout() -> None:
    result = run_python("while True:\n    pass", limits=SandboxLimits(timeout_s=30, cpu_s=1))
    assert not result.timed_out  # the CPU cap, not the 30 s timeout, ended it
    assert result.exit_code != 0


def test_memory_bomb_is_stopped() -> None:
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024**2))"
    result = run_python(code, limits=SandboxLimits(memory_bytes=512 * 1024**2))
    assert result.exit_code != 0
    assert "MemoryError" in result.stderr


def test_file_size_limit() -> None:
    code = "open('big.bin', 'wb').write(b'x' * (8 * 1024**2))"
    result = run_python(code, limits=SandboxLimits(file_bytes=1024**2))
    assert result.exit_code != 0


def _private_above(path: Path) -> bool:
    """Whether a folder above `path` is closed to other users (the sandbox then mounts a
    folder of its own in its place, and what lies below is not there at all)."""
    return any(not os.stat(folder).st_mode & stat.S_IXOTH for folder in path.parents)


@needs_landlock
def test_writing_outside_the_temp_dir_fails(tmp_path: Path) -> None:
    """Refused, or, under a private folder (a pytest temp root in `mktemp -d`), not there."""
    target = tmp_path / "escaped.txt"
    code = f"open({str(target)!r}, 'w').write('x')\n"
    result = run_python(code + "open('inside.txt', 'w').write('ok')")
    assert result.exit_code != 0
    hidden = _private_above(tmp_path) and "FileNotFoundError" in result.stderr
    assert "PermissionError" in result.stderr or hidden, result.stderr
    assert not target.exists()
    ok = run_python("open('inside.txt', 'w').write('ok'); print(open('inside.txt').read())")
    assert ok.ok and ok.stdout.strip() == "ok"


@needs_landlock
def test_reading_the_project_is_refused() -> None:
    """The project's files cannot be read: refused, or not there at all where a folder above
    them is private and the sandbox mounts its own in its place."""
    result = run_python(f"print(open({str(Path(__file__).resolve())!r}).read())")
    assert result.exit_code != 0
    assert "PermissionError" in result.stderr or "FileNotFoundError" in result.stderr
    assert "def test_reading_the_project_is_refused" not in result.stdout


def test_no_network() -> None:
    code = "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=2)"
    result = run_python(code)
    if not any(layer.startswith(("no-network", "no-tcp")) for layer in result.enforced):
        pytest.skip("no network isolation on this kernel")
    assert result.exit_code != 0
    assert "PermissionError" in result.stderr or "unreachable" in result.stderr


def test_subprocesses_are_refused_but_threads_work() -> None:
    result = run_python("import os\nos.fork()")
    assert "no-subprocesses(seccomp)" in result.enforced
    assert result.exit_code != 0
    threads = run_python(
        "import threading\nt = threading.Thread(target=print, args=('t',))\nt.start(); t.join()"
    )
    assert threads.ok and threads.stdout.strip() == "t"


def test_minimal_environment() -> None:
    os.environ["TB_SECRET_FOR_TEST"] = "leak"
    try:
        result = run_python("import os; print(sorted(os.environ))", env={"MCQ_SEED": "3"})
    finally:
        del os.environ["TB_SECRET_FOR_TEST"]
    assert "TB_SECRET_FOR_TEST" not in result.stdout
    assert "MCQ_SEED" in result.stdout


def test_parent_survives_and_keeps_working() -> None:
    killer = run_python(f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)")
    assert "ProcessLookupError" in killer.stderr  # the harness is outside its PID namespace
    hog = run_python(
        "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024**2))",
        limits=SandboxLimits(memory_bytes=256 * 1024**2),
    )
    assert not hog.ok and "MemoryError" in hog.stderr  # the cap stopped the child, not us
    spin = run_python("while True:\n    pass", limits=SandboxLimits(timeout_s=1))
    assert spin.timed_out and not spin.ok
    assert run_python("print(6 * 7)").stdout.strip() == "42"  # and the harness still works
