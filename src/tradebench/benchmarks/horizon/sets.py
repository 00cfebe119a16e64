"""`tradebench horizon questions`: build a question set, check it against the raw files,
write it as JSON lines. The harness builds the same set inside each episode; this shows it
(and its balance and check) before any model is asked."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tradebench.benchmarks.horizon.check import Mismatch, check_questions
from tradebench.benchmarks.horizon.options import DEFAULT_PER_MONTH
from tradebench.benchmarks.horizon.questions import KINDS, Kind, Question, build_questions
from tradebench.benchmarks.horizon.stats import PowerRow, power_table
from tradebench.data.dataset import load_dataset
from tradebench.errors import ConfigError
from tradebench.files import write_bytes_atomic


@dataclass(frozen=True)
class QuestionSet:
    """A written question set and what its check found."""

    path: Path
    questions: list[Question]
    mismatches: list[Mismatch]

    def counts(self) -> dict[str, Counter[str]]:
        """Per kind, how often each answer letter occurs."""
        out: dict[str, Counter[str]] = {}
        for q in self.questions:
            out.setdefault(q.kind, Counter())[q.answer] += 1
        return out


def write_question_set(
    dataset: Path,
    start: str,
    end: str,
    out: Path,
    per_month: int = DEFAULT_PER_MONTH,
    seed: int = 0,
    kinds: tuple[Kind, ...] = KINDS,
) -> QuestionSet:
    """Build the questions of months `start`..`end`, check every answer against the raw
    files, and write them to `out` (one JSON object per line).

    Raises:
        ConfigError: No trading day in the span, or an unknown kind.
    """
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ConfigError(f"unknown question kinds {bad}; known: {', '.join(KINDS)}")
    questions = build_questions(load_dataset(dataset), start, end, per_month, seed, kinds)
    if not questions:
        raise ConfigError(f"{dataset} has no trading day between {start} and {end}")
    text = "".join(q.model_dump_json() + "\n" for q in questions)
    write_bytes_atomic(Path(out), text.encode())
    return QuestionSet(Path(out), questions, check_questions(questions, Path(dataset)))


MIXES: dict[str, tuple[float, ...]] = {
    "bars only (best_week, close_of)": (0.25, 0.25),
    "bars and index": (0.25, 0.5, 0.25),
    "bars, index and headlines": (0.25, 0.5, 0.25, 0.25),
    "index only (two options)": (0.5,),
}
"""The chance mixes a month can have (one entry per kind, cycled)."""


def power_tables(alpha: float, target: float) -> dict[str, list[PowerRow]]:
    """Questions per month needed per lift, for every mix of kinds."""
    return {name: power_table(mix, target=target, alpha=alpha) for name, mix in MIXES.items()}
