"""cvxpy belongs to the mandate extra: the core install imports `tradebench.risk` and the
mandate benchmark without it, and a projection that needs the solver says which extra to
install in one line."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["cvxpy"] = None  # importing it now raises ImportError
import tradebench.benchmarks.mandate.benchmark
from tradebench.errors import ConfigError
from tradebench.risk import RiskConstraints, is_feasible, project
c = RiskConstraints(long_only=True, max_weight=0.3, max_turnover=0.5, cash_floor=0.1)
assert is_feasible({"A": 0.2, "B": 0.2}, c)  # checks need no solver
assert not project({"A": 0.2, "B": 0.2}, c).changed  # nor does a feasible proposal
try:
    project({"A": 0.9, "B": 0.6}, c, previous={"A": 0.1})
except ConfigError as exc:
    print(exc)
else:
    raise AssertionError("projected without cvxpy")
"""


def test_risk_without_cvxpy_names_its_extra() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip()
    assert line == (
        "the mandate benchmark's projection solves with cvxpy: pip install 'tradebench[mandate]'"
    )
