"""`tradebench plan SPEC`: what a run will be able to show, before it spends anything.

A plan is a list of sections, each built from one `PlanContext` (the spec, its windows'
decision days, the assumptions given on the command line) by a builder registered in
`PLAN_SECTIONS` under its name; `build_plan` runs them in registration order. A new
section is one module that registers a builder and is imported here, nothing else
changes. The power section lives in `plan.power`, the cost and time section in
`plan.cost`.
"""

from tradebench.plan import cost, power
from tradebench.plan.core import (
    PLAN_SECTIONS,
    PlanAssumptions,
    PlanContext,
    PlanSection,
    build_plan,
    plan_context,
)

__all__ = [
    "PLAN_SECTIONS",
    "PlanAssumptions",
    "PlanContext",
    "PlanSection",
    "build_plan",
    "cost",
    "plan_context",
    "power",
]
