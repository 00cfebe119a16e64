"""Fixtures of the integration tests: interpreters that have verifiers 0.3.x and 0.4.x.

verifiers is an optional extra with a heavy dependency tree (and 0.3 and 0.4 pin different
ones), so it is not installed into the project's environment, and tests never install
anything (they must not reach the network). `.ci/run` builds one virtual environment per
release once (cached) and points `TRADEBENCH_VERIFIERS_PYTHON` (0.3) and
`TRADEBENCH_VERIFIERS04_PYTHON` (0.4) at them; each fixture uses its interpreter, or the
current one when it already has that release, and otherwise skips saying how to get one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.benchmarks.single_stock.conftest import ss_dataset_dir  # noqa: F401  (fixture)
from tradebench.integrations.verifiers_env import VERIFIERS_REQUIREMENT

VERIFIERS04_REQUIREMENT = "verifiers>=0.4.0,<0.5"


def has_verifiers(python: str, series: str = "0.3.") -> bool:
    """Whether `python` imports verifiers of the `series` (and so, with this repo, the
    environment)."""
    probe = (
        f"import sys, verifiers; sys.exit(0 if verifiers.__version__.startswith({series!r}) else 1)"
    )
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _interpreter(variable: str, series: str, requirement: str, venv: str) -> str:
    """The interpreter named by `variable`, else this one if it has `series`; else skip."""
    explicit = os.environ.get(variable)
    for python in [explicit] if explicit else [sys.executable]:
        if has_verifiers(python, series):
            return python
    pytest.skip(
        f"no interpreter with {requirement}: set {variable} to one (`.ci/run` builds "
        f"~/.cache/tradebench/{venv}: a venv with --system-site-packages, then "
        f"`pip install '{requirement}'` and `pip install --no-deps -e .`)"
    )


@pytest.fixture(scope="session")
def verifiers_python() -> Iterator[str]:
    """A python with verifiers 0.3.x and this repo importable (skips when there is none)."""
    yield _interpreter(
        "TRADEBENCH_VERIFIERS_PYTHON", "0.3.", VERIFIERS_REQUIREMENT, "verifiers-0.3-venv"
    )


@pytest.fixture(scope="session")
def verifiers04_python() -> Iterator[str]:
    """A python with verifiers 0.4.x and this repo importable (skips when there is none)."""
    yield _interpreter(
        "TRADEBENCH_VERIFIERS04_PYTHON", "0.4.", VERIFIERS04_REQUIREMENT, "verifiers-0.4-venv"
    )
