"""Fixtures of the integration tests: an interpreter that has verifiers 0.3.x.

verifiers is an optional extra with a heavy dependency tree, so it is not installed into
the project's environment, and tests never install anything (they must not reach the
network). `.ci/run` builds a virtual environment with it once (cached) and points
`TRADEBENCH_VERIFIERS_PYTHON` at it; the fixture uses that interpreter, or the current one
when it already has verifiers 0.3.x, and otherwise skips the test saying how to get one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.benchmarks.single_stock.conftest import ss_dataset_dir  # noqa: F401  (fixture)
from tradebench.integrations.verifiers_env import VERIFIERS_REQUIREMENT

PROBE = "import sys, verifiers; sys.exit(0 if verifiers.__version__.startswith('0.3.') else 1)"


def has_verifiers(python: str) -> bool:
    """Whether `python` imports verifiers 0.3.x (and so, with this repo, the environment)."""
    try:
        done = subprocess.run([python, "-c", PROBE], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.fixture(scope="session")
def verifiers_python() -> Iterator[str]:
    """A python with verifiers 0.3.x and this repo importable (skips when there is none)."""
    explicit = os.environ.get("TRADEBENCH_VERIFIERS_PYTHON")
    for python in [explicit] if explicit else [sys.executable]:
        if has_verifiers(python):
            yield python
            return
    pytest.skip(
        f"no interpreter with {VERIFIERS_REQUIREMENT}: set TRADEBENCH_VERIFIERS_PYTHON to one "
        "(`.ci/run` builds it: a venv with --system-site-packages, then "
        f"`pip install '{VERIFIERS_REQUIREMENT}'` and `pip install --no-deps -e .`)"
    )
