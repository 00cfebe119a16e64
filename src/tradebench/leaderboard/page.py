"""The leaderboard as one self-contained HTML page (the report's page, table and figure
helpers: plotly embedded once, every data string escaped, seeded figure ids)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from tradebench.report.html import MISSING, Section, figure_html, fmt, note, render_page, table
from tradebench.report.tables import group_label, window_label

if TYPE_CHECKING:
    from tradebench.leaderboard.board import Leaderboard

TEMPLATE = "plotly_white"

__all__ = ["render_leaderboard"]


def _interval(mean: float, low: float, high: float, digits: int = 4) -> str:
    """`mean [low, high]`, or the mean alone when the interval is undefined."""
    if pd.isna(mean):
        return MISSING
    if pd.isna(low) or pd.isna(high):
        return fmt(mean, digits)
    return f"{fmt(mean, digits)} [{fmt(low, digits)}, {fmt(high, digits)}]"


def _shown(rows: pd.DataFrame) -> pd.DataFrame:
    """The board rows as display columns."""
    return pd.DataFrame(
        {
            "rank": rows["rank"],
            "agent": [group_label(a, m, k) for a, m, k in rows[["agent", "mode", "mask"]].values],
            "run": rows["run"],
            "seeds": rows["seeds"],
            "days": rows["steps"],
            "mean [interval]": [
                _interval(*v) for v in rows[["mean", "low", "high"]].itertuples(index=False)
            ],
            "equal weight": rows["equal_weight"],
            "index": rows["index"],
            "vs equal weight [interval] (pairs)": [
                _interval(m, lo, hi) + (f" ({n})" if n else "")
                for m, lo, hi, n in rows[
                    [
                        "vs_equal_weight",
                        "vs_equal_weight_low",
                        "vs_equal_weight_high",
                        "vs_equal_weight_n",
                    ]
                ].itertuples(index=False)
            ],
            "vs index [interval] (pairs)": [
                _interval(m, lo, hi) + (f" ({n})" if n else "")
                for m, lo, hi, n in rows[
                    ["vs_index", "vs_index_low", "vs_index_high", "vs_index_n"]
                ].itertuples(index=False)
            ],
            "selection alpha": rows["selection_alpha"],
            "cutoff": rows["knowledge_cutoff"].fillna(""),
            "window vs cutoff": rows["period"],
        }
    )


def _figure(rows: pd.DataFrame, title: str) -> go.Figure:
    """Seed means with their intervals as error bars, one marker per row."""
    labels = [
        f"{r} · {group_label(a, m, k)}"
        for r, a, m, k in rows[["run", "agent", "mode", "mask"]].values
    ]
    fig = go.Figure(
        go.Scatter(
            x=rows["mean"],
            y=labels,
            mode="markers",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (rows["high"] - rows["mean"]).fillna(0),
                "arrayminus": (rows["mean"] - rows["low"]).fillna(0),
            },
        )
    )
    fig.update_layout(
        title=title, template=TEMPLATE, height=140 + 28 * len(rows), xaxis_title="seed mean"
    )
    return fig


def _window_sections(board: Leaderboard) -> list[Section]:
    """One section per window: the ranked table and the interval chart."""
    sections = []
    metric = board.options.metric
    for (bench, dataset, start, end), rows in board.rows.groupby(
        ["benchmark", "dataset", "window_start", "window_end"], sort=True
    ):
        title = f"{bench} · {window_label(start, end)}"
        parts = [note(f"dataset {dataset}; metric {metric}"), table(_shown(rows))]
        parts.append(figure_html(_figure(rows, f"{metric}, {title}"), title))
        sections.append(Section(title, "".join(parts)))
    return sections


def _cutoff_section(board: Leaderboard) -> Section:
    """Model rows split by where their window lies against the model's cutoff."""
    models = board.rows[board.rows["kind"] == "llm"]
    declared = models[models["period"] != "no cutoff"]
    if declared.empty:
        return Section(
            "Knowledge cutoffs",
            note(
                "No model row declares a knowledge_cutoff (spec: agents[].knowledge_cutoff, "
                "or --cutoff AGENT=DATE): every model result may come from a period the "
                "model saw in training."
                if not models.empty
                else "No model rows on this board."
            ),
        )
    parts = [
        note(
            "after cutoff: the window starts after the model's declared knowledge cutoff "
            "(out of sample for the model); before cutoff: the window ends on or before it "
            "(the model may have seen the outcome); spans cutoff: partly both. Compare "
            "models on after-cutoff cells."
        )
    ]
    for period in ("after cutoff", "spans cutoff", "before cutoff"):
        rows = declared[declared["period"] == period]
        if not rows.empty:
            parts.append(f"<h3>{period}</h3>")
            parts.append(table(_shown(rows)))
    return Section("Knowledge cutoffs", "".join(parts))


def _mcq_section(board: Leaderboard) -> Section | None:
    """MCQ accuracy per tier beside its constant-letter and chance baselines."""
    if board.mcq.empty:
        return None
    mcq = board.mcq
    shown = pd.DataFrame(
        {
            "rank": mcq["rank"],
            "folder": mcq["folder"],
            "model": mcq["model"],
            "mode": mcq["mode"],
            "tier": mcq["tier"],
            "questions": mcq["questions"],
            "runs": mcq["runs"],
            "accuracy [Wilson 95%]": [
                _interval(a, lo, hi, 3)
                for a, lo, hi in mcq[["accuracy", "wilson_low", "wilson_high"]].itertuples(
                    index=False
                )
            ],
            "constant letter": [
                f"{fmt(a, 3)} ({c})" if c else MISSING
                for a, c in mcq[["constant_letter_accuracy", "constant_letter"]].itertuples(
                    index=False
                )
            ],
            "chance": mcq["chance"],
            "beats constant letter": mcq["beats_constant_letter"],
        }
    )
    text = (
        "Accuracy is the mean over runs; the interval is Wilson's on correct / attempts. "
        "constant letter: always answering the slice's most frequent key letter; chance: "
        "1/4. beats constant letter: the interval lies wholly above it. Ranks compare models "
        "on the same question file, mode and tier, tying overlapping intervals."
    )
    return Section("MCQ accuracy by tier", note(text) + table(shown, digits=3))


def _method_section(board: Leaderboard) -> Section:
    """How to read the board."""
    o = board.options
    runs = ", ".join(sorted(board.rows["run"].unique()))
    text = [
        f"Runs: {runs}. One row per agent and cell (mode × mask × window); seeds pooled. "
        f"Metric: {o.metric} (higher is better), finished episodes only.",
        f"Intervals: {o.intervals.describe()}; with one seed the bootstrap interval is the "
        "point itself and the t interval is undefined (shown as the mean alone).",
        "vs equal weight: the mean of per-seed differences against the run's equal-weight "
        "baseline on the same window and seed, counted only where both ran the same days. "
        "vs index: each episode against the index over that episode's own days. The "
        "number in brackets after an interval is how many pairs it is over.",
        "rank: 1 + the number of rows of the same window whose interval lies wholly above "
        "the row's; overlapping intervals share a rank.",
        "selection alpha: the mean linked selection contribution from `tradebench "
        "attribute`, where the run was attributed.",
    ]
    single = board.rows[board.rows["seeds"] < 2]
    if not single.empty:
        text.append(
            f"{len(single)} of {len(board.rows)} rows rest on one seed: they carry no estimate "
            "of spread, so their ranks compare points; run more seeds before reading a gap "
            "between them as a difference."
        )
    return Section("How to read this board", "".join(note(t) for t in text))


def render_leaderboard(board: Leaderboard) -> str:
    """The whole page as HTML text."""
    sections = [_method_section(board), _cutoff_section(board), *_window_sections(board)]
    mcq = _mcq_section(board)
    if mcq is not None:
        sections.append(mcq)
    return render_page("tradebench leaderboard", sections, "across run folders")
