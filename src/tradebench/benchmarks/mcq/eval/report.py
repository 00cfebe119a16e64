"""The MCQ evaluation section, rendered from `results.parquet` of `tradebench mcq eval`.

Reads only the results file (one row per question x run) and computes every number with
`benchmarks.mcq.eval.summary`, so the page shows exactly what `summary.json` says:
accuracy per model and tier (mean ± std over runs, Wilson 95% interval) beside the random
and best constant-letter baselines, the accuracy with excluded attempts left out,
per-template accuracy, unparseable and excluded replies, tokens and recorded latency, and
every two models compared on the same questions (McNemar exact, Holm;
`benchmarks.mcq.eval.paired`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa

from tradebench.benchmarks.mcq.eval.paired import paired_models
from tradebench.benchmarks.mcq.eval.summary import (
    RANDOM_BASELINE,
    RESULT_COLUMNS,
    Accuracy,
    ModelSummary,
    accuracy,
    summarise,
)
from tradebench.errors import DataError
from tradebench.files import write_text_atomic
from tradebench.report.html import Section, figure_html, mean_std, note, render_page, table

TITLE = "MCQ evaluation"
NOTE = (
    "Accuracy is the mean over runs of each run's share of correct answers, ± the sample "
    "standard deviation across runs (blank with one run). The Wilson 95% interval is over "
    "all attempts (questions x runs) pooled; repeats of a question are not independent, so "
    "with several runs it is optimistic. Baselines on the same questions: random = 1/4; "
    "constant letter = always answering the slice's most frequent key letter (shown in "
    "brackets). Unparseable: no letter in an accepted form (no tools) or no accepted answer "
    "submission (with tools). Excluded: no-tools replies that were tool calls; they count as "
    "wrong in every accuracy except the 'all w/o excluded' row, which leaves them out. "
    "Latency is the recorded model time, without sandbox time."
)


PAIRS_NOTE = (
    "Every two models (or one model in two modes) on the questions both answered: a "
    "question is right for a model when it was answered correctly in more than half of its "
    "runs; only_a / only_b count the questions only one of the two got right. p_value: "
    "McNemar's exact test (two-sided binomial of only_a in only_a + only_b at 1/2); p_holm: "
    "Holm's adjustment over the pairs in this table."
)


def _interval(acc: Accuracy) -> str:
    if acc.wilson_low is None or acc.wilson_high is None:
        return "–"
    return f"[{acc.wilson_low:.3f}, {acc.wilson_high:.3f}]"


def _constant(acc: Accuracy) -> str:
    if acc.constant_letter_accuracy is None:
        return "–"
    return f"{acc.constant_letter_accuracy:.3f} ({acc.constant_letter})"


def _accuracy_row(label: dict[str, str], acc: Accuracy) -> dict[str, object]:
    return {
        **label,
        "questions": acc.questions,
        "attempts": acc.attempts,
        "correct": acc.correct,
        "accuracy": mean_std(acc.mean, acc.std, 3),
        "Wilson 95%": _interval(acc),
        "constant letter": _constant(acc),
    }


def _temperature(s: ModelSummary) -> str:
    return "–" if s.temperature is None else f"{s.temperature:g}"


def accuracy_table(summaries: list[ModelSummary]) -> pd.DataFrame:
    """One row per model x slice (all, all without excluded attempts, each tier)."""
    rows = []
    for s in summaries:
        label = {
            "model": s.model,
            "mode": s.mode,
            "runs": str(s.runs),
            "temperature": _temperature(s),
        }
        tail = {"random": f"{s.random_baseline:.2f}"}
        rows.append({**_accuracy_row({**label, "slice": "all"}, s.overall), **tail})
        kept = _accuracy_row({**label, "slice": "all w/o excluded"}, s.overall_without_excluded)
        rows.append({**kept, **tail})
        rows += [{**_accuracy_row({**label, "slice": t}, a), **tail} for t, a in s.tiers.items()]
    return pd.DataFrame(rows)


def usage_table(summaries: list[ModelSummary]) -> pd.DataFrame:
    """Counts, tokens and recorded latency per model."""
    return pd.DataFrame(
        [
            {
                "model": s.model,
                "mode": s.mode,
                "unparseable": s.unparseable,
                "excluded (tool calls)": s.excluded_attempts,
                "run_python calls": s.tool_calls,
                "input tokens": s.input_tokens,
                "output tokens": s.output_tokens,
                "tokens / attempt": s.tokens_per_attempt,
                "latency s": s.latency_s,
                "latency s / attempt": s.latency_s_per_attempt,
            }
            for s in summaries
        ]
    )


def template_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per model x template, hardest first within each model."""
    out = []
    for (model, template), group in rows.groupby(["model", "template"], sort=True):
        acc = accuracy(group)
        out.append(
            {
                "model": model,
                "template": template,
                "tier": group["tier"].iloc[0],
                **_accuracy_row({}, acc),
                "_mean": acc.mean,
            }
        )
    frame = pd.DataFrame(out).sort_values(["model", "_mean", "template"], kind="stable")
    return frame.drop(columns="_mean").reset_index(drop=True)


def tier_figure(summaries: list[ModelSummary]) -> go.Figure:
    """Bars of accuracy per tier and model, with the Wilson interval as error bars."""
    fig = go.Figure()
    for s in summaries:
        slices = {"all": s.overall, **s.tiers}
        means = [a.mean for a in slices.values()]
        fig.add_trace(
            go.Bar(
                name=f"{s.model} ({s.mode})",
                x=list(slices),
                y=means,
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [(a.wilson_high or 0) - (a.mean or 0) for a in slices.values()],
                    "arrayminus": [(a.mean or 0) - (a.wilson_low or 0) for a in slices.values()],
                },
            )
        )
    fig.add_hline(y=RANDOM_BASELINE, line_dash="dash", annotation_text="random (1/4)")
    fig.update_layout(
        title="Accuracy by tier (Wilson 95% interval)",
        yaxis={"range": [0, 1], "title": "accuracy"},
        barmode="group",
        height=380,
    )
    return fig


def mcq_section(rows: pd.DataFrame) -> Section:
    """The section for a results frame (columns of `eval.run.EvalRow`)."""
    summaries = summarise(rows)
    body = [
        note(NOTE),
        figure_html(tier_figure(summaries)),
        "<h3>Accuracy</h3>",
        table(accuracy_table(summaries)),
        "<h3>Replies, tokens and time</h3>",
        table(usage_table(summaries), digits=3),
    ]
    if "template" in rows.columns:
        body += ["<h3>Accuracy per template</h3>", table(template_table(rows))]
    pairs = paired_models(rows)
    if not pairs.empty:
        body += ["<h3>Models compared on the same questions</h3>", note(PAIRS_NOTE)]
        body.append(table(pairs, digits=3))
    return Section(TITLE, "".join(body))


def mcq_report(results_path: Path, out_html: Path) -> Path:
    """Write a standalone HTML page with the MCQ section of a `results.parquet`.

    Raises:
        DataError: The results file is missing, unreadable, not MCQ results or empty.
    """
    results_path = Path(results_path)
    if results_path.is_dir():
        results_path = results_path / "results.parquet"
    if not results_path.exists():
        raise DataError(f"results file {results_path} not found; run `tradebench mcq eval`")
    fix = "pass the results.parquet `tradebench mcq eval` wrote"
    try:
        rows = pd.read_parquet(results_path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        reason = " ".join(str(exc).split())[:160]
        raise DataError(
            f"{results_path} is not a readable Parquet table ({reason}); {fix}"
        ) from None
    missing = sorted(set(RESULT_COLUMNS) - set(rows.columns))
    if missing:
        raise DataError(f"{results_path} is not an MCQ results table (no {missing}); {fix}")
    if rows.empty:
        raise DataError(f"results file {results_path} holds no rows")
    subtitle = f"tradebench MCQ evaluation of {results_path.resolve()}"
    page = render_page(f"tradebench {TITLE}", [mcq_section(rows)], subtitle)
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out_html, page)
    return out_html
