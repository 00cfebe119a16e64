"""Models compared on the same questions: McNemar's exact test, Holm-adjusted.

Per question, a model counts as right when it answered correctly in more than half of its
runs (with one run: that run). Two models (or one model in two modes) are compared on the
questions both answered: `only_a` questions only the first got right, `only_b` only the
second; McNemar's exact test is the two-sided binomial test of `only_a` in
`only_a + only_b` at 1/2 (`metrics.stats.mcnemar_exact`). Holm's adjustment runs over all
pairs of one results table.
"""

from __future__ import annotations

from itertools import combinations

import pandas as pd

from tradebench.metrics.stats import holm_adjust, mcnemar_exact

PAIR_COLUMNS = [
    "model_a",
    "mode_a",
    "model_b",
    "mode_b",
    "questions",
    "accuracy_a",
    "accuracy_b",
    "only_a",
    "only_b",
    "p_value",
    "p_holm",
]

__all__ = ["PAIR_COLUMNS", "paired_models"]


def _right(results: pd.DataFrame) -> pd.DataFrame:
    """(question x (model, mode)) table: right in more than half of the runs."""
    share = results.groupby(["model", "mode", "question_id"])["correct"].mean()
    return (share > 0.5).unstack(["model", "mode"])


def paired_models(results: pd.DataFrame) -> pd.DataFrame:
    """Every pair of (model, mode) in an MCQ results table (`results.parquet` rows),
    compared on their common questions (`PAIR_COLUMNS`; module docstring)."""
    if results.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    right = _right(results)
    rows = []
    for a, b in combinations(sorted(right.columns), 2):
        both = right[[a, b]].dropna()
        ra, rb = both[a].astype(bool), both[b].astype(bool)
        only_a, only_b = int((ra & ~rb).sum()), int((rb & ~ra).sum())
        rows.append(
            {
                "model_a": a[0],
                "mode_a": a[1],
                "model_b": b[0],
                "mode_b": b[1],
                "questions": len(both),
                "accuracy_a": float(ra.mean()) if len(both) else float("nan"),
                "accuracy_b": float(rb.mean()) if len(both) else float("nan"),
                "only_a": only_a,
                "only_b": only_b,
                "p_value": mcnemar_exact(only_a, only_b),
            }
        )
    table = pd.DataFrame(rows, columns=PAIR_COLUMNS[:-1])
    table["p_holm"] = holm_adjust(table["p_value"].to_numpy(dtype=float)) if len(table) else []
    return table[PAIR_COLUMNS]
