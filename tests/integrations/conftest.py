"""Fixtures of the integration tests: an interpreter that has verifiers 0.3.x.

verifiers is an optional extra with a heavy dependency tree, so CI does not install it
into the project's environment. The fixture uses, in order: `TRADEBENCH_VERIFIERS_PYTHON`,
the current interpreter when it already has verifiers 0.3.x, or a virtual environment
built once under pytest's cache folder (`--system-site-packages`, so the project's own
dependencies are reused; then `pip install` verifiers and `-e` this repo without deps).
Building needs PyPI; when it fails the tests skip and say why.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.benchmarks.single_stock.conftest import ss_dataset_dir  # noqa: F401  (fixture)
from tradebench.integrations.verifiers_env import VERIFIERS_REQUIREMENT

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 900
READY = "ready"


def has_verifiers(python: str) -> bool:
    """Whether `python` imports verifiers 0.3.x."""
    probe = "import sys, verifiers; sys.exit(0 if verifiers.__version__.startswith('0.3.') else 1)"
    try:
        return (
            subprocess.run([python, "-c", probe], capture_output=True, timeout=120).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _run(cmd: list[str], timeout: int) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"`{' '.join(cmd[2:5])}` failed:\n{tail}")


def build_venv(root: Path) -> str:
    """Build (or reuse) the verifiers venv under `root`; returns its python."""
    venv = root / "venv"
    python = str(venv / "bin" / "python")
    if (root / READY).exists() and has_verifiers(python):
        return python
    subprocess.run(["rm", "-rf", str(venv)], check=True)
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], 120)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    _run([*pip, VERIFIERS_REQUIREMENT], BUILD_TIMEOUT_S)
    _run([*pip, "--no-deps", "-e", str(REPO)], 300)
    if not has_verifiers(python):
        raise RuntimeError("verifiers does not import in the new venv")
    (root / READY).write_text(VERIFIERS_REQUIREMENT + "\n")
    return python


@pytest.fixture(scope="session")
def verifiers_python(request: pytest.FixtureRequest) -> Iterator[str]:
    """A python with verifiers 0.3.x and this repo importable (skips when none can be had)."""
    explicit = os.environ.get("TRADEBENCH_VERIFIERS_PYTHON")
    if explicit:
        yield explicit
        return
    if has_verifiers(sys.executable):
        yield sys.executable
        return
    root = Path(request.config.cache.mkdir("tradebench-verifiers-0.3"))
    with (root / ".lock").open("w") as lock:  # xdist workers build it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            python = build_venv(root)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(
                f"cannot build a venv with {VERIFIERS_REQUIREMENT} (needs PyPI): {exc}; "
                "or set TRADEBENCH_VERIFIERS_PYTHON to an interpreter that has it"
            )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    yield python
