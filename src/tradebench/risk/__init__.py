"""Risk mandates: typed constraints, the mandate compilers, and the projection critic.

A mandate in plain English compiles once to `RiskConstraints` (`compile_mandate`, a
deterministic phrase grammar, or `compile_mandate_llm`, a forced tool call); `project`
moves a proposed portfolio to the nearest one the constraints allow and says which
constraints were binding. docs/risk.md has the conventions, the grammar and the rules.
"""

from tradebench.risk.compile_llm import CompiledMandate, MandateCompileFailed, compile_mandate_llm
from tradebench.risk.constraints import (
    CONSTRAINTS_VERSION,
    RiskConstraints,
    SectorCap,
    constraints_hash,
    render_constraints,
)
from tradebench.risk.feasibility import FEASIBILITY_TOL, Violation, is_feasible, violations
from tradebench.risk.grammar import compile_mandate
from tradebench.risk.projection import (
    ACTIVE_TOL,
    MIN_HELD_WEIGHT,
    ConstraintCheck,
    Projection,
    project,
)

__all__ = [
    "ACTIVE_TOL",
    "CONSTRAINTS_VERSION",
    "FEASIBILITY_TOL",
    "MIN_HELD_WEIGHT",
    "CompiledMandate",
    "ConstraintCheck",
    "MandateCompileFailed",
    "Projection",
    "RiskConstraints",
    "SectorCap",
    "Violation",
    "compile_mandate",
    "compile_mandate_llm",
    "constraints_hash",
    "is_feasible",
    "project",
    "render_constraints",
    "violations",
]
