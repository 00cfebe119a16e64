"""The independent checker: its own simulator, its own derivations, a per-question report."""

from __future__ import annotations

from tradebench.benchmarks.mcq.check.check import CheckReport, Verdict, check_records

__all__ = ["CheckReport", "Verdict", "check_records"]
