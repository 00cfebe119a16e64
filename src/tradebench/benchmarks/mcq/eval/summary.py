"""Aggregate evaluation rows (one per question x run) into accuracy, counts, time and tokens.

Conventions:
- `per_run`: accuracy of each run over all its questions; `mean` is their mean and `std`
  their sample standard deviation (ddof = 1; None with a single run), so `std` measures
  how much a rerun of the whole set moves the score.
- `wilson_low`/`wilson_high`: Wilson 95% interval of the pooled proportion, correct
  attempts / all attempts (questions x runs). Repeats of one question are not independent,
  so with several runs this interval is narrower than the question sample justifies; with
  one run it is the usual interval over questions.
- `unparseable`: attempts without a letter that were not refused tool calls (no tools: no
  letter in an accepted form or an unreadable reply; with tools: no accepted `answer`).
- Excluded attempts: no-tools replies that were tool calls. They count as wrong in
  `overall` and the tiers, and are left out of `overall_without_excluded`.
- Baselines beside each accuracy: `random_baseline` (1/4, uniform guessing) and, per slice,
  `constant_letter_accuracy`, the score of always answering the slice's most frequent key
  letter (`constant_letter`) on the same questions.
- Time is the sum of the model calls' recorded latencies (sandbox time is not included).

Pure functions of the results frame; the report renders these same numbers.
"""

from __future__ import annotations

import statistics

import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.metrics.stats import wilson_interval

TIERS = ("easy", "medium", "hard")
RANDOM_BASELINE = 0.25
LETTERS = ("A", "B", "C", "D")
RESULT_COLUMNS = (
    "model",
    "mode",
    "run",
    "question_id",
    "tier",
    "answer",
    "correct",
    "parsed",
    "refused_tool_call",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "tool_calls",
)
"""Columns `summarise` reads."""


class Accuracy(BaseModel):
    """Accuracy of one slice (overall, a tier, a template) over runs."""

    model_config = ConfigDict(frozen=True)

    questions: int
    """Distinct questions in the slice."""
    attempts: int
    """Rows (questions x runs)."""
    correct: int
    """Correct rows."""
    per_run: list[float]
    """Accuracy of each run, in run order."""
    mean: float | None
    """Mean of `per_run` (None when the slice is empty)."""
    std: float | None
    """Sample standard deviation of `per_run` (None with fewer than two runs)."""
    wilson_low: float | None
    """Lower bound of the Wilson 95% interval of correct / attempts."""
    wilson_high: float | None
    """Upper bound of that interval."""
    constant_letter: str | None
    """The slice's most frequent key letter (the first in A-D order on a tie)."""
    constant_letter_accuracy: float | None
    """Accuracy of always answering `constant_letter` on the slice's questions."""


class ModelSummary(BaseModel):
    """Everything the summary says about one model in one mode."""

    model_config = ConfigDict(frozen=True)

    model: str
    """`provider:model` label."""
    mode: str
    """`no_tools` or `with_tools`."""
    runs: int
    """Number of runs (samples per question)."""
    temperature: float | None
    """Sampling temperature of the model calls (None when the rows do not record it)."""
    overall: Accuracy
    """All questions; excluded attempts count as wrong."""
    overall_without_excluded: Accuracy
    """All questions, excluded attempts (no-tools tool calls) left out."""
    random_baseline: float
    """Expected accuracy of uniform guessing among four options."""
    tiers: dict[str, Accuracy]
    """Per difficulty tier present in the set."""
    unparseable: int
    """Attempts without a letter that were not refused tool calls."""
    refused_tool_calls: int
    """No-tools replies refused because they carried a tool call."""
    excluded_attempts: int
    """Attempts left out of `overall_without_excluded` (= `refused_tool_calls`)."""
    tool_calls: int
    """`run_python` calls over all attempts."""
    input_tokens: int
    """Prompt tokens over all attempts."""
    output_tokens: int
    """Completion tokens over all attempts."""
    tokens_per_attempt: float
    """(input + output tokens) / attempts."""
    latency_s: float
    """Sum of recorded model-call latencies."""
    latency_s_per_attempt: float
    """`latency_s` / attempts."""
    tool_choice_fallbacks: int = 0
    """Steps down the forced-call ladder over all attempts: `tool_choice` forms the endpoint
    refused or ignored before one worked (0 for results written before they were kept)."""
    text_fallbacks: dict[str, int] = {}
    """Tools: attempts answered over plain text, by reason (`refused`: the server refused
    the tool schemas; `dropped`: it dropped every attempt of the first request with tools;
    `dropped before`: after such a drop, no tools request was sent); empty when none."""


def _none(value: float) -> float | None:
    return None if value != value else float(value)  # NaN -> None


def constant_letter(rows: pd.DataFrame) -> tuple[str | None, float | None]:
    """The most frequent key letter over a slice's distinct questions and its accuracy.

    Why: with unbalanced keys, always answering one letter beats 1/4; a model's accuracy
    means little unless it beats this too.
    """
    keys = rows.drop_duplicates("question_id")["answer"]
    if keys.empty:
        return None, None
    counts = [int((keys == letter).sum()) for letter in LETTERS]
    best = max(range(len(LETTERS)), key=lambda i: (counts[i], -i))
    return LETTERS[best], counts[best] / len(keys)


def accuracy(rows: pd.DataFrame) -> Accuracy:
    """Accuracy of a slice of result rows (columns `run`, `question_id`, `answer`, `correct`)."""
    per_run = [float(g["correct"].mean()) for _, g in rows.groupby("run", sort=True)]
    correct, attempts = int(rows["correct"].sum()), len(rows)
    interval = wilson_interval(correct, attempts)
    letter, letter_accuracy = constant_letter(rows)
    return Accuracy(
        questions=int(rows["question_id"].nunique()),
        attempts=attempts,
        correct=correct,
        per_run=per_run,
        mean=statistics.fmean(per_run) if per_run else None,
        std=statistics.stdev(per_run) if len(per_run) > 1 else None,
        wilson_low=_none(interval.low),
        wilson_high=_none(interval.high),
        constant_letter=letter,
        constant_letter_accuracy=letter_accuracy,
    )


def _temperature(rows: pd.DataFrame) -> float | None:
    if "temperature" not in rows.columns:
        return None
    values = rows["temperature"].dropna().unique()
    return float(values[0]) if len(values) == 1 else None


def _model_summary(rows: pd.DataFrame) -> ModelSummary:
    attempts = len(rows)
    tokens = int(rows["input_tokens"].sum()) + int(rows["output_tokens"].sum())
    latency = float(rows["latency_s"].sum())
    refused = rows["refused_tool_call"].astype(bool)
    return ModelSummary(
        model=str(rows["model"].iloc[0]),
        mode=str(rows["mode"].iloc[0]),
        runs=int(rows["run"].nunique()),
        temperature=_temperature(rows),
        overall=accuracy(rows),
        overall_without_excluded=accuracy(rows[~refused]),
        random_baseline=RANDOM_BASELINE,
        tiers={t: accuracy(rows[rows["tier"] == t]) for t in TIERS if (rows["tier"] == t).any()},
        unparseable=int((~rows["parsed"].astype(bool) & ~refused).sum()),
        refused_tool_calls=int(refused.sum()),
        excluded_attempts=int(refused.sum()),
        tool_calls=int(rows["tool_calls"].sum()),
        input_tokens=int(rows["input_tokens"].sum()),
        output_tokens=int(rows["output_tokens"].sum()),
        tokens_per_attempt=tokens / attempts if attempts else 0.0,
        latency_s=latency,
        latency_s_per_attempt=latency / attempts if attempts else 0.0,
        tool_choice_fallbacks=int(rows["tool_choice_fallbacks"].sum())
        if "tool_choice_fallbacks" in rows.columns
        else 0,
        text_fallbacks=_text_fallbacks(rows),
    )


def _text_fallbacks(rows: pd.DataFrame) -> dict[str, int]:
    """Attempts answered over plain text, by reason (none for rows written before)."""
    if "text_fallback" not in rows.columns:
        return {}
    reasons = rows["text_fallback"].fillna("").astype(str)
    return {str(k): int(n) for k, n in reasons[reasons != ""].value_counts().sort_index().items()}


def summarise(rows: pd.DataFrame) -> list[ModelSummary]:
    """One summary per (model, mode) in the rows, in order of first appearance."""
    keys = list(dict.fromkeys(zip(rows["model"], rows["mode"], strict=True)))
    return [_model_summary(rows[(rows["model"] == m) & (rows["mode"] == mode)]) for m, mode in keys]
