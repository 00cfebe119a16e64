"""Inference over finished episodes: each board row's intervals (over seeds and over days),
paired comparisons of rows with Holm-adjusted p-values, ranks that separate rows only where
an adjusted difference is significant, the memory gap, and the probabilistic and deflated
Sharpe ratios. Pure functions of episode tables (no file access), used by the leaderboard
and the run report; the methods are in docs/statistics.md.
"""

from tradebench.inference.pairs import (
    COMPARISON_COLUMNS,
    GAP_COLUMNS,
    compare_rows,
    comparisons,
    memory_gaps,
    significance_ranks,
)
from tradebench.inference.rows import (
    ROW_STAT_COLUMNS,
    InferenceSettings,
    deflate,
    per_seed,
    row_statistics,
)

__all__ = [
    "COMPARISON_COLUMNS",
    "GAP_COLUMNS",
    "ROW_STAT_COLUMNS",
    "InferenceSettings",
    "compare_rows",
    "comparisons",
    "deflate",
    "memory_gaps",
    "per_seed",
    "row_statistics",
    "significance_ranks",
]
