"""A leaderboard across run folders: one row per agent and benchmark cell.

A *cell* is (benchmark, dataset, mode, mask, window); a row is one agent of one run in one
cell, its seeds pooled. Per row (`BOARD_COLUMNS`): the seed mean of the metric with its
interval (`leaderboard.stats`), the equal-weight baseline and the index on the same window,
the paired differences against both with intervals, selection alpha from the attribution
where present, the model's knowledge cutoff and whether the window lies after it, and a
rank among the rows of the same window that ties overlapping intervals.

Pairing (same window, same seed, same decision days):
- vs the index: each episode's own metric minus the index's over that episode's days (the
  panel's `benchmark_` value), so a short model episode meets the index on its own days;
  for a metric the panel has no index value of, the index episode of the window is used
  when it ran as many days.
- vs equal weight: the run's equal-weight episode of the same window and seed (the only one
  of the window when it has one), counted only when both ran the same number of days.
References are taken from the same run folder as the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from tradebench.leaderboard.data import board_episodes, mcq_rows
from tradebench.leaderboard.page import render_leaderboard
from tradebench.leaderboard.stats import IntervalSettings, mean_interval, tie_ranks

BOARD_FILE = "leaderboard.parquet"
MCQ_BOARD_FILE = "leaderboard_mcq.parquet"
PAGE_FILE = "leaderboard.html"
CELL = ["benchmark", "dataset", "window_start", "window_end"]
"""Rows ranked against each other: one window of one benchmark on one dataset."""
ROW = ["run", *CELL, "agent", "kind", "mode", "mask"]
"""What identifies a board row."""
BOARD_COLUMNS = [
    *ROW,
    "model",
    "seeds",
    "steps",
    "mean",
    "low",
    "high",
    "equal_weight",
    "index",
    "vs_equal_weight_n",
    "vs_equal_weight",
    "vs_equal_weight_low",
    "vs_equal_weight_high",
    "vs_index_n",
    "vs_index",
    "vs_index_low",
    "vs_index_high",
    "selection_alpha",
    "knowledge_cutoff",
    "period",
    "rank",
]
PERIODS = ("after cutoff", "spans cutoff", "before cutoff", "no cutoff")
"""Where a row's window lies against its model's knowledge cutoff (`no cutoff`: none
declared, or not a model)."""

__all__ = [
    "BOARD_COLUMNS",
    "BOARD_FILE",
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
    """Interval method, confidence, bootstrap resamples and seed."""
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


def cutoff_period(start: str, end: str, cutoff: date | None) -> str:
    """`after cutoff` (the window starts after it), `before cutoff` (it ends on or before
    it), `spans cutoff`, or `no cutoff` when none is declared."""
    if cutoff is None or pd.isna(cutoff):
        return "no cutoff"
    first, last = date.fromisoformat(start), date.fromisoformat(end)
    if first > cutoff:
        return "after cutoff"
    return "before cutoff" if last <= cutoff else "spans cutoff"


def _paired(own: pd.DataFrame, ref: pd.DataFrame, column: str = "value") -> np.ndarray:
    """Per-seed differences own - ref over the same days (the single reference episode
    pairs every seed when the window has one)."""
    if ref.empty:
        return np.array([])
    if len(ref) == 1:
        one = ref.iloc[0]
        same = own[own["n_steps"] == one["n_steps"]]
        return (same["value"] - one[column]).to_numpy(dtype=float)
    joined = own.merge(ref, on="seed", suffixes=("", "_ref"))
    joined = joined[joined["n_steps"] == joined["n_steps_ref"]]
    return (joined["value"] - joined[f"{column}_ref"]).to_numpy(dtype=float)


def _index_diffs(own: pd.DataFrame, index: pd.DataFrame) -> np.ndarray:
    """Per-episode differences against the index over the episode's own days."""
    if own["index_value"].notna().any():
        return (own["value"] - own["index_value"]).to_numpy(dtype=float)
    return _paired(own, index)


def _row(
    key: tuple, own: pd.DataFrame, refs: dict[str, pd.DataFrame], settings: IntervalSettings
) -> dict:
    """One board row from its episodes and its window's reference episodes."""
    row = dict(zip(ROW, key, strict=True))
    seed_mean = mean_interval(own["value"], settings)
    ew, index = refs["equal_weight"], refs["index"]
    is_ew, is_index = bool(own["is_equal_weight"].any()), row["kind"] == "benchmark"
    vs_ew = mean_interval([] if is_ew else _paired(own, ew), settings)
    vs_index = mean_interval([] if is_index else _index_diffs(own, index), settings)
    cutoff = own["knowledge_cutoff"].dropna()
    cutoff_day = cutoff.iloc[0] if len(cutoff) and row["kind"] == "llm" else None
    steps = sorted(set(own["n_steps"].astype(int)))
    return {
        **row,
        "model": own["model"].dropna().iloc[0] if own["model"].notna().any() else None,
        "seeds": seed_mean.n,
        "steps": ", ".join(map(str, steps)),
        "mean": seed_mean.mean,
        "low": seed_mean.low,
        "high": seed_mean.high,
        "equal_weight": float(ew["value"].mean()) if len(ew) else np.nan,
        "index": float(index["value"].mean()) if len(index) else np.nan,
        "vs_equal_weight_n": vs_ew.n,
        "vs_equal_weight": vs_ew.mean,
        "vs_equal_weight_low": vs_ew.low,
        "vs_equal_weight_high": vs_ew.high,
        "vs_index_n": vs_index.n,
        "vs_index": vs_index.mean,
        "vs_index_low": vs_index.low,
        "vs_index_high": vs_index.high,
        "selection_alpha": float(own["selection"].mean())
        if own["selection"].notna().any()
        else np.nan,
        "knowledge_cutoff": cutoff_day.isoformat() if cutoff_day else None,
        "period": cutoff_period(row["window_start"], row["window_end"], cutoff_day),
    }


def board_rows(episodes: pd.DataFrame, settings: IntervalSettings) -> pd.DataFrame:
    """The board (`BOARD_COLUMNS`) from finished episodes (`leaderboard.data.EPISODE_COLUMNS`),
    ranked within each window by `rank` (ties for overlapping intervals), best first."""
    rows = []
    window_runs = ["run", *CELL]
    for _, window in episodes.groupby(window_runs, sort=True, dropna=False):
        refs = {
            "equal_weight": window[window["is_equal_weight"]],
            "index": window[window["kind"] == "benchmark"],
        }
        for key, own in window.groupby(ROW, sort=True, dropna=False):
            rows.append(_row(key, own, refs, settings))
    board = pd.DataFrame(rows, columns=BOARD_COLUMNS[:-1])
    ranks = pd.Series(np.nan, index=board.index)
    for _, cell in board.groupby(CELL, sort=False, dropna=False):
        ranks[cell.index] = tie_ranks(cell["low"], cell["high"], cell["mean"])
    board["rank"] = ranks.astype("Int64")
    board = board.sort_values([*CELL, "rank", "mean"], ascending=[*[True] * 5, False])
    return board.reset_index(drop=True)[BOARD_COLUMNS]


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
        rows = board_rows(episodes, options.intervals)
    else:  # an MCQ-only board
        rows = pd.DataFrame(columns=BOARD_COLUMNS)
    mcq = mcq_rows(options.mcq_dirs) if options.mcq_dirs else pd.DataFrame()
    if not mcq.empty:
        mcq = mcq_ranks(mcq)
    return Leaderboard(rows=rows, mcq=mcq, options=options)


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
    board.rows.to_parquet(written[0], index=False)
    if not board.mcq.empty:
        written.append(out_dir / MCQ_BOARD_FILE)
        board.mcq.to_parquet(written[-1], index=False)
    page = out_dir / PAGE_FILE
    page.write_text(render_leaderboard(board), encoding="utf-8")
    return [*written, page]
