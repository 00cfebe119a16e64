"""The plan's context, sections and section registry (`tradebench.plan`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tradebench.registry import Registry
from tradebench.runs.spec import RunSpec

__all__ = [
    "PLAN_SECTIONS",
    "PlanAssumptions",
    "PlanContext",
    "PlanSection",
    "build_plan",
    "plan_context",
]


@dataclass(frozen=True)
class PlanAssumptions:
    """What the plan assumes where the spec says nothing (stated on its output)."""

    daily_sd: float = 0.01
    """Sd of the daily return difference of two agents (default 1%)."""
    seed_sd: float | None = None
    """Sd across seeds of one agent's window total return (None: not stated)."""
    rho: float = 0.5
    """Correlation of two agents' daily returns (for the Sharpe difference)."""
    target_return: float | None = None
    """Annual return difference to detect (for the days and seeds needed)."""
    target_sharpe: float | None = None
    """Annualised Sharpe difference to detect (for the days needed)."""
    alpha: float = 0.05
    """Two-sided test level."""
    power: float = 0.8
    """Power."""
    previous: Path | None = None
    """A previous run folder whose variance replaces the stated sds and rho, and whose
    measured requests and tokens per step replace the stated ones."""
    requests_per_step: float = 2.0
    """Model requests per decision step (research, then the submission)."""
    input_tokens_per_request: int = 4000
    """Input tokens of one request."""
    output_tokens_per_request: int = 400
    """Output tokens of one request (at most the agent's `max_tokens`)."""


@dataclass(frozen=True)
class PlanContext:
    """What every plan section reads."""

    spec: RunSpec
    window_days: tuple[int, ...]
    """Decision days per window: weekdays from start to end inclusive (holidays are not
    removed, so an upper bound on trading days)."""
    assumptions: PlanAssumptions = field(default_factory=PlanAssumptions)

    @property
    def days(self) -> int:
        """Decision days over all windows."""
        return int(sum(self.window_days))

    @property
    def seeds(self) -> int:
        """Seeds per cell."""
        return len(self.spec.seeds)


@dataclass(frozen=True)
class PlanSection:
    """One titled table of the plan, with the notes that state its assumptions."""

    title: str
    rows: list[tuple[str, str]]
    """(quantity, value) pairs."""
    notes: list[str] = field(default_factory=list)


PLAN_SECTIONS: Registry[Callable[[PlanContext], PlanSection | None]] = Registry("plan section")
"""Section builders by name, run in registration order."""


def plan_context(spec_path: Path, assumptions: PlanAssumptions) -> PlanContext:
    """The context of a spec file.

    Raises:
        ConfigError: The spec does not load.
    """
    spec = RunSpec.load(spec_path)
    days = tuple(
        int(np.busday_count(w.start, np.datetime64(w.end) + np.timedelta64(1, "D")))
        for w in spec.windows
    )
    return PlanContext(spec=spec, window_days=days, assumptions=assumptions)


def build_plan(context: PlanContext) -> list[PlanSection]:
    """Every registered section of the plan (those with something to say)."""
    built = (builder(context) for builder in PLAN_SECTIONS.loaded().values())
    return [section for section in built if section is not None]
