"""Report section: every finished model episode's submissions, rejections, fallbacks, HTTP
retries and stated reasons (`report.episodes` builds the tables).

The section shows only what the model saw or wrote: masked identifiers and relative step
numbers, never an episode id (it holds the window's dates), a real date or a real symbol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from tradebench.report.episodes import (
    COUNT_COLUMNS,
    model_episodes,
    reliability_row,
    stated_reasons,
    submission_rejections,
)
from tradebench.report.html import Section, esc, fmt, note, table
from tradebench.report.load import RunData, read_trace

if TYPE_CHECKING:
    from tradebench.report.sections import ReportOptions

TITLE = "Model episodes"
NUMERIC = (*COUNT_COLUMNS, "backoff s")

__all__ = ["model_episodes_section"]


def _headline(row: dict) -> str:
    """The one-line summary of an episode's reliability."""
    return (
        f"steps {fmt(row['steps'])} · submission attempts {fmt(row['attempts'])} · "
        f"rejected {fmt(row['rejected attempts'])} · fallbacks {fmt(row['fallbacks'])} · "
        f"HTTP retries {fmt(row['HTTP retries'])}"
    )


def _counts_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows of `reliability_row` as a frame with nullable integer counts."""
    return pd.DataFrame(rows).astype(dict.fromkeys(COUNT_COLUMNS, "Int64"))


def _episode_block(
    anchor: str,
    label: str,
    row: dict,
    rejections: pd.DataFrame | None,
    reasons: pd.DataFrame | None,
    options: ReportOptions,
) -> str:
    """One episode's collapsible block: headline, counts, rejections, stated reasons."""
    parts = [
        f'<details class="episode" id="{esc(anchor)}"><summary>{esc(label)} — '
        f"{esc(_headline(row))}</summary>"
    ]
    counts = _counts_frame([row])
    parts.append(table(counts, digits=3, classes={c: "num" for c in NUMERIC}))
    if rejections is None:
        parts.append(note("No trace.jsonl: rejections and stated reasons were not recorded."))
    elif rejections.empty:
        parts.append(note("Every submission attempt was accepted."))
    else:
        shown = rejections.head(options.rejections_per_episode)
        cut = len(rejections) - len(shown)
        parts.append("<h4>Rejected submissions and the feedback the model was given</h4>")
        if cut:
            parts.append(note(f"The first {len(shown)} of {len(rejections)} rejections."))
        parts.append(table(shown, classes={"feedback": "reason", "step": "num", "attempt": "num"}))
    if reasons is not None and not reasons.empty:
        parts.append("<h4>Stated reasons (sampled)</h4>")
        classes = {"overall_reason": "reason", "orders": "reason", "step": "num"}
        parts.append(table(reasons, classes=classes))
    parts.append("</details>")
    return "".join(parts)


def model_episodes_section(run: RunData, options: ReportOptions) -> Section | None:
    """One row per finished model episode (the reliability counts) and one collapsible
    block each with its rejections and a sample of its stated reasons; left out of runs
    without model episodes."""
    episodes = model_episodes(run)
    unfinished = run.summary[(run.summary["kind"] == "llm") & (run.summary["status"] != "done")]
    if episodes.empty and unfinished.empty:
        return None
    intro = note(
        "Per finished model episode: decision steps; submission attempts (the first and "
        "every retry after an invalid one); rejected attempts, with the codes of the "
        "benchmark's checks (SCHEMA: the submission did not match the tool's schema; "
        "MALFORMED_JSON: unreadable arguments; NO_SUBMISSION / WRONG_TOOL: the forced reply "
        "had no submission); fallbacks (steps where no attempt was accepted, so nothing "
        "traded); unreadable replies; the endpoint's HTTP retries and seconds of backoff; "
        "orders and the broker's reject codes. Identifiers, feedback and reasons are what "
        "the model saw and wrote (masked under the blind levels); steps are numbered from 1."
    )
    parts = [intro]
    if not unfinished.empty:
        parts.append(note(f"{len(unfinished)} unfinished model episode(s) are not shown."))
    rows, blocks = [], []
    for k, ep in enumerate(episodes.itertuples(index=False), start=1):
        trace = read_trace(run, ep.episode_id)
        rejections = submission_rejections(trace) if trace is not None else None
        reasons = stated_reasons(trace, options.reasons_per_episode) if trace else None
        row = reliability_row(run.steps[ep.episode_id], run.orders[ep.episode_id], rejections)
        rows.append({"episode": ep.label, **row})
        blocks.append(_episode_block(f"episode-{k}", ep.label, row, rejections, reasons, options))
    if rows:
        summary = _counts_frame(rows)
        parts.append(table(summary, digits=3, classes={c: "num" for c in NUMERIC}))
        parts.append(
            note(
                f"Each episode below: its counts, up to {options.rejections_per_episode} "
                f"rejections and up to {options.reasons_per_episode} stated reasons from "
                "steps with an accepted submission, evenly spaced (first and last included)."
            )
        )
        parts += blocks
    return Section(TITLE, "".join(parts))
