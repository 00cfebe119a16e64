"""The leaderboard as one self-contained HTML page (the report's page, table and figure
helpers: plotly embedded once, every data string escaped, seeded figure ids)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from tradebench.report.html import MISSING, Section, figure_html, fmt, note, render_page, table
from tradebench.report.ranking import ANNUAL_FACTORS, MIN_ANNUALISED_DAYS, per_day_factor
from tradebench.report.tables import group_label, window_label

if TYPE_CHECKING:
    from tradebench.leaderboard.board import Leaderboard

TEMPLATE = "plotly_white"
CELL = ["benchmark", "dataset", "window_start", "window_end"]

__all__ = ["comparison_table", "render_leaderboard"]


def _interval(mean: float, low: float, high: float, digits: int = 4) -> str:
    """`mean [low, high]`, or the mean alone when the interval is undefined."""
    if pd.isna(mean):
        return MISSING
    if pd.isna(low) or pd.isna(high):
        return fmt(mean, digits)
    return f"{fmt(mean, digits)} [{fmt(low, digits)}, {fmt(high, digits)}]"


def _with_source(mean: float, low: float, high: float, source: str, n: int) -> str:
    """`mean [low, high] (source)`, or `mean (n=1: no interval)`."""
    if pd.isna(mean):
        return MISSING
    if source == "none" or pd.isna(low):
        return f"{fmt(mean)} (n={n}: no interval)"
    return f"{_interval(mean, low, high)} ({source})"


def _p(p: float) -> str:
    return MISSING if pd.isna(p) else f"{p:.3g}"


METRIC_UNITS = [
    "mean",
    "low",
    "high",
    "seeds_low",
    "seeds_high",
    "days_low",
    "days_high",
    "equal_weight",
    "index",
    "vs_equal_weight",
    "vs_equal_weight_low",
    "vs_equal_weight_high",
    "vs_index",
    "vs_index_low",
    "vs_index_high",
]
"""Board columns in the metric's units (divided back to a daily figure in a per-day row)."""
PAIR_UNITS = ["difference", "low", "high", "days_difference", "days_low", "days_high"]
"""Comparison columns in the metric's units."""
PER_DAY = " per day"


def daily_rows(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The board rows with an annualised metric's figures per day in `per_day` rows
    (`report.ranking.per_day_factor`): a ratio scaled up from a few days to a year reads
    as a finding it is not."""
    out = rows.copy()
    factors = [per_day_factor(metric, bool(d)) for d in rows["per_day"]]
    for column in METRIC_UNITS:
        out[column] = pd.to_numeric(rows[column], errors="coerce").astype(float) / factors
    return out


def daily_pairs(pairs: pd.DataFrame, board: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Comparisons with annualised figures per day where either side is a per-day row: the
    metric's differences (an annualised metric) and the Sharpe difference (always
    annualised)."""
    per_day = board["per_day"].astype(bool)
    either = [
        bool(per_day.get(int(a), False)) or bool(per_day.get(int(b), False))
        for a, b in pairs[["a", "b"]].itertuples(index=False)
    ]
    out = pairs.copy()
    for column, name in [*((c, metric) for c in PAIR_UNITS), ("sharpe_difference", "sharpe")]:
        factors = [per_day_factor(name, e) for e in either]
        out[column] = pd.to_numeric(pairs[column], errors="coerce").astype(float) / factors
    out["per_day"] = either
    out["per_day_metric"] = [e and metric in ANNUAL_FACTORS for e in either]
    return out


def _shown(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The board rows as display columns (an annualised metric per day in per-day rows)."""
    annual = metric in ANNUAL_FACTORS
    suffix = [PER_DAY if annual and d else "" for d in rows["per_day"].astype(bool)]
    rows = daily_rows(rows, metric)
    return pd.DataFrame(
        {
            "rank": rows["rank"],
            "agent": [group_label(a, m, k) for a, m, k in rows[["agent", "mode", "mask"]].values],
            "runs": rows["runs"],
            "seeds": rows["seeds"],
            "days": rows["steps"],
            "flags": rows["flags"],
            "mean [interval] (uncertainty)": [
                _with_source(m, lo, hi, src, n) + tail
                for m, lo, hi, src, n, tail in zip(
                    *(rows[c] for c in ("mean", "low", "high", "interval", "seeds")),
                    suffix,
                    strict=True,
                )
            ],
            "over days [interval]": [
                _interval(m, lo, hi) if not pd.isna(lo) else MISSING
                for m, lo, hi in rows[["mean", "days_low", "days_high"]].itertuples(index=False)
            ],
            "equal weight": rows["equal_weight"],
            "index": rows["index"],
            "vs equal weight [interval] (pairs; Holm p)": [
                _interval(m, lo, hi) + (f" ({n:.0f}; p {_p(p)})" if n else "")
                for m, lo, hi, n, p in rows[
                    [
                        "vs_equal_weight",
                        "vs_equal_weight_low",
                        "vs_equal_weight_high",
                        "vs_equal_weight_n",
                        "vs_equal_weight_p",
                    ]
                ].itertuples(index=False)
            ],
            "vs index [interval] (pairs; Holm p)": [
                _interval(m, lo, hi) + (f" ({n:.0f}; p {_p(p)})" if n else "")
                for m, lo, hi, n, p in rows[
                    ["vs_index", "vs_index_low", "vs_index_high", "vs_index_n", "vs_index_p"]
                ].itertuples(index=False)
            ],
            "PSR": rows["psr"],
            "DSR": rows["dsr"],
            "selection alpha": rows["selection_alpha"],
            "cutoff": rows["knowledge_cutoff"].fillna(""),
            "window vs cutoff": rows["period"],
        }
    )


def _figure(rows: pd.DataFrame, title: str) -> go.Figure:
    """Seed means with their intervals as error bars, one marker per row."""
    labels = [
        f"{r} · {group_label(a, m, k)}"
        for r, a, m, k in rows[["runs", "agent", "mode", "mask"]].values
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


def _side(frame: pd.DataFrame, side: str) -> list[str]:
    cols = [f"{side}_agent", f"{side}_mode", f"{side}_mask"]
    return [
        a if a == "index" else group_label(a, m, k)
        for a, m, k in frame[cols].itertuples(index=False)
    ]


def comparison_table(frame: pd.DataFrame, first: str = "a", second: str = "b") -> pd.DataFrame:
    """Paired comparisons as display columns (`first` minus `second`); `daily_pairs`'
    `per_day` and `per_day_metric` columns mark the figures it showed per day."""
    none = pd.Series(False, index=frame.index)
    per_day = frame.get("per_day", none)
    metric_per_day = frame.get("per_day_metric", none)
    return pd.DataFrame(
        {
            first: _side(frame, "a"),
            second: _side(frame, "b"),
            "pairs": frame["pairs"],
            "difference [interval] (uncertainty)": [
                _with_source(d, lo, hi, src, n) + (PER_DAY if daily and not pd.isna(d) else "")
                for d, lo, hi, src, n, daily in zip(
                    *(frame[c] for c in ("difference", "low", "high", "source", "pairs")),
                    metric_per_day,
                    strict=True,
                )
            ],
            "p": [_p(p) for p in frame["p"]],
            "Holm p": [_p(p) for p in frame["p_holm"]],
            "over days [interval]; p": [
                f"{_interval(d, lo, hi)}; p {_p(p)}" if not pd.isna(d) else MISSING
                for d, lo, hi, p in frame[
                    ["days_difference", "days_low", "days_high", "days_p"]
                ].itertuples(index=False)
            ],
            "Sharpe difference; JKM p": [
                f"{fmt(d, 3)}{PER_DAY if daily else ''}; p {_p(p)}" if not pd.isna(d) else MISSING
                for d, p, daily in zip(
                    frame["sharpe_difference"], frame["sharpe_p"], per_day, strict=True
                )
            ],
        }
    )


def _window_sections(board: Leaderboard) -> list[Section]:
    """One section per window: the ranked table, the interval chart, the comparisons."""
    sections = []
    metric = board.options.metric
    for (bench, dataset, start, end), rows in board.rows.groupby(CELL, sort=True):
        title = f"{bench} · {window_label(start, end)}"
        parts = [note(f"dataset {dataset}; metric {metric}"), table(_shown(rows, metric))]
        parts.append(_per_day_note(rows, metric))
        parts.append(figure_html(_figure(daily_rows(rows, metric), f"{metric}, {title}"), title))
        pairs = board.comparisons
        if not pairs.empty:
            mine = pairs[(pairs["window_start"] == start) & (pairs["window_end"] == end)]
            mine = mine[(mine["benchmark"] == bench) & (mine["dataset"] == dataset)]
            if not mine.empty:
                parts.append("<h3>Paired comparisons (first minus second)</h3>")
                parts.append(table(comparison_table(daily_pairs(mine, board.rows, metric))))
        sections.append(Section(title, "".join(parts)))
    return sections


def _per_day_note(rows: pd.DataFrame, metric: str) -> str:
    """The note under a window whose rows ran too few days for annualised figures."""
    if not rows["per_day"].astype(bool).any():
        return ""
    shown = "the Sharpe differences"
    if metric in ANNUAL_FACTORS:
        shown = f"{metric} and {shown}"
    return note(
        f"per day: rows behind fewer than {MIN_ANNUALISED_DAYS} decision days (flag `N "
        f"days`) show {shown} as daily figures, not annualised: scaled up from a few days "
        "to a year they would read as results they are not."
    )


def _gap_section(board: Leaderboard) -> Section | None:
    """The memory gap: bright minus each blinded level, per model, mode and window."""
    if board.gaps.empty:
        return None
    gaps = daily_pairs(board.gaps, board.rows, board.options.metric)
    shown = comparison_table(gaps, "bright", "blinded level")
    shown.insert(0, "window", [window_label(s, e) for s, e in gaps[CELL[2:]].values])
    text = (
        "The memory gap: the model's metric with real names and dates (bright) minus the "
        "same model, mode, window and seeds under a mask (blinded: both hidden; stock_blind, "
        "date_blind: one hidden). A positive gap is return the model makes only when it can "
        "recognise what it trades. Intervals and p-values as in the paired comparisons "
        "(Holm over the whole board)."
    )
    return Section("Memory gap", note(text) + table(shown))


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
            parts.append(table(_shown(rows, board.options.metric)))
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


def _mcq_pairs_section(board: Leaderboard) -> Section | None:
    """MCQ models compared on the same questions (McNemar exact, Holm)."""
    pairs = board.mcq_pairs
    if pairs.empty:
        return None
    shown = pd.DataFrame(
        {
            "folder": pairs["folder"],
            "a": [f"{m} · {d}" for m, d in pairs[["model_a", "mode_a"]].values],
            "b": [f"{m} · {d}" for m, d in pairs[["model_b", "mode_b"]].values],
            "questions": pairs["questions"],
            "accuracy a / b": [
                f"{fmt(x, 3)} / {fmt(y, 3)}" for x, y in pairs[["accuracy_a", "accuracy_b"]].values
            ],
            "only a right": pairs["only_a"],
            "only b right": pairs["only_b"],
            "McNemar p": [_p(p) for p in pairs["p_value"]],
            "Holm p": [_p(p) for p in pairs["p_holm"]],
        }
    )
    text = (
        "Models paired on the same questions: a question counts as right for a model when "
        "it was answered correctly in more than half of the model's runs. McNemar's exact "
        "test (two-sided binomial on the questions only one of the two got right); Holm's "
        "adjustment over the pairs of each folder."
    )
    return Section("MCQ models compared", note(text) + table(shown, digits=3))


def _method_section(board: Leaderboard) -> Section:
    """How to read the board."""
    o = board.options
    runs = ", ".join(sorted({r for rs in board.rows["runs"] for r in str(rs).split(", ")}))
    level = 1 - o.intervals.confidence
    text = [
        f"Runs: {runs}. One row per agent and cell (mode × mask × window): an agent is what "
        "its spec entry makes it (baseline and arguments, or provider, model and sampling), "
        "whatever it is named, so the same agent from several runs is one row (runs lists "
        "them) and a seed run in two folders is averaged, never counted twice. "
        f"Metric: {o.metric} (higher is better), finished episodes only.",
        f"Intervals: {o.intervals.describe()}. Each interval names the uncertainty it "
        "carries: seeds (the spread of outcomes across seeds, on these same market days), "
        "used where at least two seeds differ; days (the spread over resampled market days "
        "of this window, the statistic averaged over the row's seeds), used where seeds do "
        "not differ (one seed, or rules that ignore the seed) and the metric is built from "
        "daily returns (total_return, sharpe, information_ratio); none: one value has no "
        "interval. The over-days interval is shown beside every row that has daily returns.",
        "Paired comparisons: every pair of rows of a window, on the seeds both ran over the "
        "same days, and every row against the index over its own days: the paired t-test "
        "over seeds where defined, else the block bootstrap of the difference over days; "
        "the Sharpe difference of the seed-mean daily returns with the Jobson-Korkie-Memmel "
        "test. Holm's adjustment runs over every comparison on this board "
        f"({len(board.comparisons)} comparisons).",
        f"rank: 1 + the number of rows of the same window that are better with a "
        f"Holm-adjusted p-value under {level:.2g}; rows not separated share a rank.",
        "flags, as in the run reports: no trades (no order filled within the row's days), "
        "all fallbacks (a model that fell back on every step), one seed (a model row of a "
        f"single seed), N days (under {MIN_ANNUALISED_DAYS} decision days: annualised "
        "figures are shown per day).",
        "PSR: the probability that the true Sharpe ratio of the seed-mean daily returns "
        "exceeds 0 (Bailey & López de Prado 2012). DSR: the same against the Sharpe ratio "
        "the best of this board's rows would reach by luck (deflated by the number of rows "
        "with daily returns and the variance of their Sharpe ratios).",
        "selection alpha: the mean linked selection contribution from `tradebench "
        "attribute`, where the run was attributed. Methods and their simulated coverage: "
        "docs/statistics.md.",
    ]
    none = board.rows[board.rows["interval"] == "none"]
    if not none.empty:
        text.append(
            f"{len(none)} of {len(board.rows)} rows have no interval (one value and no daily "
            "returns to resample): their ranks never separate them from another row."
        )
    return Section("How to read this board", "".join(note(t) for t in text))


def render_leaderboard(board: Leaderboard) -> str:
    """The whole page as HTML text."""
    sections = [_method_section(board), _cutoff_section(board), *_window_sections(board)]
    for extra in (_gap_section(board), _mcq_section(board), _mcq_pairs_section(board)):
        if extra is not None:
            sections.append(extra)
    return render_page("tradebench leaderboard", sections, "across run folders")
