"""`tradebench plan SPEC`: what a run will be able to show, before it spends anything.

A plan is a list of sections, each built from one `PlanContext` (the spec, its windows'
decision days, the assumptions given on the command line) by a builder registered in
`PLAN_SECTIONS` under its name; `build_plan` runs them in registration order. A new
section (cost and time, say) is one module that registers a builder and is imported
here, nothing else changes. The power section lives in `plan.power`.
"""

from tradebench.plan import power
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
    "plan_context",
    "power",
]
