"""The 33 question templates in three tiers; importing this package registers them all."""

from __future__ import annotations

from tradebench.benchmarks.mcq.build.templates import compare, easy, hard, medium
from tradebench.benchmarks.mcq.build.templates.base import (
    ACTION_LABELS,
    TEMPLATES,
    TIERS,
    Answer,
    Instance,
    NotApplicable,
    Template,
    Tier,
    by_tier,
)

__all__ = [
    "ACTION_LABELS",
    "TEMPLATES",
    "TIERS",
    "Answer",
    "Instance",
    "NotApplicable",
    "Template",
    "Tier",
    "by_tier",
    "compare",
    "easy",
    "hard",
    "medium",
]
