"""A leaderboard across run folders: one row per agent and benchmark cell.

A *cell* is (benchmark, dataset, window); a row is one agent (by its identity:
`leaderboard.data.agent_identity`, so the same agent from several runs is one row, its
runs listed in `runs`) under one mode and mask, its seeds pooled (a seed run in two
folders is averaged, never counted twice). Per row (`BOARD_COLUMNS`): the seed mean of the
metric with the interval `interval` names (over seeds, Student t, where seeds differ; else
over days, the stationary block bootstrap; else none), the equal-weight baseline and the
index on the same window, the paired differences against both, the probabilistic and
deflated Sharpe ratios, selection alpha where attributed, the model's knowledge cutoff and
where the window lies against it, a rank that separates rows only where their
Holm-adjusted paired difference is significant, and the report's flags
(`report.ranking.row_flags`: no trades, all fallbacks, one seed, N days) with `per_day`:
the row ran fewer than 20 decision days, so the page and the terminal show its annualised
figures per day (the board's own columns keep the metric's units).

Every paired comparison on the board (`Leaderboard.comparisons`) and the memory gap
(`Leaderboard.gaps`: bright minus each blinded level) come from `tradebench.inference`
(docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from tradebench.files import write_parquet_atomic, write_text_atomic
from tradebench.inference import (
    InferenceSettings,
    comparisons,
    deflate,
    memory_gaps,
    row_statistics,
    significance_ranks,
)
from tradebench.inference.rows import day_matrix, per_seed
from tradebench.leaderboard.data import board_episodes, mcq_pairs, mcq_rows
from tradebench.leaderboard.page import render_leaderboard
from tradebench.leaderboard.stats import IntervalSettings, tie_ranks
from tradebench.report.ranking import row_flags, shows_per_day

BOARD_FILE = "leaderboard.parquet"
COMPARISONS_FILE = "comparisons.parquet"
GAPS_FILE = "memory_gap.parquet"
MCQ_BOARD_FILE = "leaderboard_mcq.parquet"
MCQ_PAIRS_FILE = "leaderboard_mcq_pairs.parquet"
PAGE_FILE = "leaderboard.html"
CELL = ["benchmark", "dataset", "window_start", "window_end"]
"""Rows ranked against each other: one window of one benchmark on one dataset."""
ROW = [*CELL, "identity", "kind", "mode", "mask"]
"""What identifies a board row."""
BOARD_COLUMNS = [
    *CELL,
    "agent",
    "identity",
    "kind",
    "mode",
    "mask",
    "runs",
    "model",
    "seeds",
    "steps",
    "mean",
    "low",
    "high",
    "interval",
    "seeds_low",
    "seeds_high",
    "days",
    "days_low",
    "days_high",
    "equal_weight",
    "index",
    "vs_equal_weight_n",
    "vs_equal_weight",
    "vs_equal_weight_low",
    "vs_equal_weight_high",
    "vs_equal_weight_p",
    "vs_index_n",
    "vs_index",
    "vs_index_low",
    "vs_index_high",
    "vs_index_p",
    "sharpe_daily",
    "psr",
    "dsr",
    "selection_alpha",
    "knowledge_cutoff",
    "period",
    "rank",
    "flags",
    "per_day",
]
INDEX_LABEL = "index"
"""The agent label of the index on the other side of a comparison."""
PERIODS = ("after cutoff", "spans cutoff", "before cutoff", "no cutoff")
"""Where a row's window lies against its model's knowledge cutoff (`no cutoff`: none
declared, or not a model)."""

__all__ = [
    "BOARD_COLUMNS",
    "BOARD_FILE",
    "COMPARISONS_FILE",
    "GAPS_FILE",
    "PERIODS",
    "Leaderboard",
    "LeaderboardOptions",
    "board_rows",
    "build_leaderboard",
    "cutoff_period",
    "write_leaderboard",
]


@dataclass(frozen=True)
class LeaderboardOptions:
    """What the board measures and how."""

    metric: str = "total_return"
    """Summary column compared (higher is better)."""
    intervals: IntervalSettings = field(default_factory=IntervalSettings)
    """Interval method over seeds, confidence, resamples and seed."""
    cutoffs: dict[str, date] = field(default_factory=dict)
    """Knowledge cutoffs per agent name, over the specs' `knowledge_cutoff`."""
    mcq_dirs: tuple[Path, ...] = ()
    """MCQ evaluation folders to add (`tradebench mcq eval -o DIR`)."""


@dataclass(frozen=True)
class Leaderboard:
    """The board's tables."""

    rows: pd.DataFrame
    """`BOARD_COLUMNS`, one row per agent and cell."""
    mcq: pd.DataFrame
    """MCQ accuracy per folder, model, mode and tier (empty without MCQ folders)."""
    options: LeaderboardOptions
    comparisons: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every paired comparison (`inference.COMPARISON_COLUMNS`, `a`/`b` board row
    numbers, -1 the index) with the rows' labels."""
    gaps: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The memory gap: bright minus each blinded level (`inference.GAP_COLUMNS`)."""
    mcq_pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    """MCQ models compared on the same questions (McNemar exact)."""


def cutoff_period(start: str, end: str, cutoff: date | None) -> str:
    """`after cutoff` (the window starts after it), `before cutoff` (it ends on or before
    it), `spans cutoff`, or `no cutoff` when none is declared."""
    if cutoff is None or pd.isna(cutoff):
        return "no cutoff"
    first, last = date.fromisoformat(start), date.fromisoformat(end)
    if first > cutoff:
        return "after cutoff"
    return "before cutoff" if last <= cutoff else "spans cutoff"


def _row(key: tuple, own: pd.DataFrame, metric: str, settings: InferenceSettings) -> dict:
    """One board row's own columns from its episodes."""
    row = dict(zip(ROW, key, strict=True))
    cutoff = own["knowledge_cutoff"].dropna()
    cutoff_day = cutoff.iloc[0] if len(cutoff) and row["kind"] == "llm" else None
    steps = sorted(set(own["n_steps"].astype(int)))
    days = steps[0] if steps else 0
    return {
        **row,
        "agent": "/".join(sorted(set(own["agent"]))),
        "runs": ", ".join(sorted(set(own["run"]))),
        "model": own["model"].dropna().iloc[0] if own["model"].notna().any() else None,
        "steps": ", ".join(map(str, steps)),
        **row_statistics(own, metric, settings),
        "selection_alpha": float(own["selection"].mean())
        if own["selection"].notna().any()
        else np.nan,
        "knowledge_cutoff": cutoff_day.isoformat() if cutoff_day else None,
        "period": cutoff_period(row["window_start"], row["window_end"], cutoff_day),
        "flags": row_flags(str(row["kind"]), own["traded"], own["fallbacks"], own["seed"], days),
        "per_day": shows_per_day(days),
    }


def _reference_columns(board: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The equal-weight and index columns of every row from the comparisons."""
    out = board.copy()
    for col in ("vs_equal_weight", "vs_index"):
        for suffix in ("_n", "", "_low", "_high", "_p"):
            out[col + suffix] = np.nan
    keyed = table.set_index(["a", "b"])
    for _, cell in board.groupby(CELL, sort=False, dropna=False):
        ew = cell.index[cell["is_equal_weight"]]
        index_rows = cell.index[cell["kind"] == "benchmark"]
        for i in cell.index:
            out.loc[i, "equal_weight"] = board.loc[ew[0], "mean"] if len(ew) else np.nan
            out.loc[i, "index"] = board.loc[index_rows[0], "mean"] if len(index_rows) else np.nan
            refs = {"vs_index": (i, -1)}
            if len(ew) and ew[0] != i:
                refs["vs_equal_weight"] = (i, int(ew[0]))
            for col, (a, b) in refs.items():
                flip = (a, b) not in keyed.index
                if flip and (b, a) not in keyed.index:
                    continue
                r = keyed.loc[(b, a) if flip else (a, b)]
                sign = -1 if flip else 1
                low, high = (-r["high"], -r["low"]) if flip else (r["low"], r["high"])
                out.loc[i, [col + "_n", col, col + "_low", col + "_high", col + "_p"]] = [
                    r["pairs"],
                    sign * r["difference"],
                    low,
                    high,
                    r["p_holm"],
                ]
    return out


def board_tables(
    episodes: pd.DataFrame, metric: str, settings: InferenceSettings
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The board (`BOARD_COLUMNS`), every comparison and the memory gap from finished
    episodes (`leaderboard.data.EPISODE_COLUMNS`)."""
    rows, groups = [], {}
    for key, own in episodes.groupby(ROW, sort=True, dropna=False):
        groups[len(rows)] = own
        rows.append(
            {
                **_row(key, own, metric, settings),
                "is_equal_weight": bool(own["is_equal_weight"].any()),
            }
        )
    board = pd.DataFrame(rows)
    returns = {}
    for i, own in groups.items():
        matrix = day_matrix(per_seed(own))
        if matrix is not None and board.loc[i, "kind"] != "benchmark":
            returns[i] = matrix.mean(axis=1)
    board["dsr"] = deflate(board, returns)
    cells = [cell for _, cell in board.groupby(CELL, sort=True, dropna=False)]
    table = comparisons(cells, groups, metric, settings)
    board = _reference_columns(board, table)
    board["rank"] = pd.Series(pd.NA, index=board.index, dtype="Int64")
    for cell in cells:
        index_rows = cell.index[cell["kind"] == "benchmark"]
        ranked = [i for i in cell.index if np.isfinite(board.loc[i, "mean"])]
        ranks = significance_ranks(ranked, table, int(index_rows[0]) if len(index_rows) else None)
        for i, r in ranks.items():
            board.loc[i, "rank"] = r
    gaps = memory_gaps(board, table)
    order = board.sort_values([*CELL, "rank", "mean"], ascending=[*[True] * 5, False]).index
    position = {int(old): new for new, old in enumerate(order)}
    position[-1] = -1  # the index's own comparisons
    for frame in (table, gaps):
        for side in ("a", "b"):
            frame[side] = frame[side].map(position).astype(int)
    return board.loc[order, BOARD_COLUMNS].reset_index(drop=True), table, gaps


def board_rows(
    episodes: pd.DataFrame, settings: IntervalSettings, metric: str = "total_return"
) -> pd.DataFrame:
    """The board alone (`BOARD_COLUMNS`), best first within each window."""
    return board_tables(episodes, metric, settings.inference())[0]


def _labelled(table: pd.DataFrame, board: pd.DataFrame) -> pd.DataFrame:
    """A comparison table with each side's cell, agent, mode, mask and runs."""
    out = table.copy()
    for side in ("a", "b"):
        rows = board.reindex(out[side].astype(int))
        for col in ("agent", "mode", "mask", "runs"):
            values = rows[col].to_numpy(dtype=object)
            if side == "b" and col == "agent":
                values = np.where(out[side] == -1, INDEX_LABEL, values)
            out[f"{side}_{col}"] = values
    cells = board.reindex(out["a"].astype(int))
    for col in CELL:
        out[col] = cells[col].to_numpy()
    return out


def build_leaderboard(
    run_dirs: Sequence[Path], options: LeaderboardOptions | None = None
) -> Leaderboard:
    """The board of `run_dirs` (and the MCQ folders in `options`).

    Raises:
        ConfigError: No run folders, a missing folder, no finished episodes, an unknown
            metric, or an MCQ folder without `summary.json`.
    """
    options = options or LeaderboardOptions()
    if run_dirs or not options.mcq_dirs:
        episodes = board_episodes(run_dirs, options.metric, options.cutoffs)
        rows, table, gaps = board_tables(episodes, options.metric, options.intervals.inference())
        table, gaps = _labelled(table, rows), _labelled(gaps, rows)
    else:  # an MCQ-only board
        rows, table, gaps = pd.DataFrame(columns=BOARD_COLUMNS), pd.DataFrame(), pd.DataFrame()
    mcq = mcq_rows(options.mcq_dirs) if options.mcq_dirs else pd.DataFrame()
    pairs = pd.DataFrame()
    if not mcq.empty:
        mcq = mcq_ranks(mcq)
        pairs = mcq_pairs(options.mcq_dirs)
    return Leaderboard(
        rows=rows.reset_index(drop=True),
        mcq=mcq,
        options=options,
        comparisons=table,
        gaps=gaps,
        mcq_pairs=pairs,
    )


def mcq_ranks(mcq: pd.DataFrame) -> pd.DataFrame:
    """MCQ rows with a tie-aware rank among models on the same questions, mode and tier
    (Wilson intervals) and whether each beats its constant-letter baseline (the interval
    lies wholly above it)."""
    out = mcq.copy()
    ranks = pd.Series(np.nan, index=out.index)
    for _, group in out.groupby(["questions_sha256", "mode", "tier"], sort=False):
        ranks[group.index] = tie_ranks(
            group["wilson_low"].astype(float),
            group["wilson_high"].astype(float),
            group["accuracy"].astype(float),
        )
    out["rank"] = ranks.astype("Int64")
    out["beats_constant_letter"] = out["wilson_low"].astype(float) > out[
        "constant_letter_accuracy"
    ].astype(float)
    return out


def write_leaderboard(
    run_dirs: Sequence[Path], out_dir: Path, options: LeaderboardOptions | None = None
) -> list[Path]:
    """Write `leaderboard.parquet`, `leaderboard.html` (and `leaderboard_mcq.parquet` with
    MCQ folders) into `out_dir`; returns the paths written.

    Raises:
        ConfigError: As `build_leaderboard`.
    """
    board = build_leaderboard(run_dirs, options)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / BOARD_FILE]
    write_parquet_atomic(board.rows, written[0], index=False)
    frames = ((COMPARISONS_FILE, board.comparisons), (GAPS_FILE, board.gaps))
    for name, frame in (*frames, (MCQ_PAIRS_FILE, board.mcq_pairs)):
        if not frame.empty:
            written.append(out_dir / name)
            write_parquet_atomic(frame, written[-1], index=False)
    if not board.mcq.empty:
        written.append(out_dir / MCQ_BOARD_FILE)
        write_parquet_atomic(board.mcq, written[-1], index=False)
    page = out_dir / PAGE_FILE
    write_text_atomic(page, render_leaderboard(board))
    return [*written, page]
