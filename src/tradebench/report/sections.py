"""The report's generic sections: one builder per section, `(RunData, ReportOptions) -> Section`.

A builder returns None to leave its section out. These cover every broker-style run
(equity, panel, mode x mask, rejections, tokens, rationales, attribution); a benchmark adds
its own through its `report_sections`, passed in `build_report(sections=...)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import yaml

from tradebench.report import figures, tables
from tradebench.report.attribution_section import attribution_section
from tradebench.report.html import Section, esc, figure_html, fmt, mean_std, note, table
from tradebench.report.load import RunData
from tradebench.runs.summary import METRIC_COLUMNS, NOT_APPLICABLE, ordered


@dataclass(frozen=True)
class ReportOptions:
    """Knobs of a report."""

    samples_per_mask: int = 5
    """Order rationales sampled per mask level."""
    sample_seed: int = 0
    """Seed of the rationale sample."""


SectionBuilder = Callable[[RunData, ReportOptions], Section | None]
"""A function that renders one section of the report, or None to skip it."""

__all__ = ["DEFAULT_SECTIONS", "ReportOptions", "SectionBuilder"]


def overview_section(run: RunData, options: ReportOptions) -> Section:
    """Spec summary, episode counts by kind and status, the full spec."""
    counts = tables.status_counts(run.summary)
    parts = [
        "<h3>Episodes by kind and status</h3>",
        table(counts, index=True),
        "<h3>Spec</h3>",
    ]
    if run.spec:
        parts.append(table(tables.spec_overview(run.spec)))
        dump = yaml.safe_dump(run.spec, sort_keys=False, allow_unicode=True)
        parts.append(f"<details><summary>resolved spec.yaml</summary><pre>{esc(dump)}</pre>")
        parts.append("</details>")
    else:
        parts.append(note("No spec.yaml in the run folder."))
    return Section("Run overview", "".join(parts))


def _figure_groups(curves: pd.DataFrame, order: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """(title suffix, curves) per figure: one per LLM mode with the baselines in each."""
    modes = [m for m in ordered(curves["mode"], order) if m != NOT_APPLICABLE]
    if not modes:
        return [("", curves)]
    shared = curves[curves["mode"] == NOT_APPLICABLE]
    return [(f" · {m}", pd.concat([curves[curves["mode"] == m], shared])) for m in modes]


def _final_values(curves: pd.DataFrame) -> pd.DataFrame:
    """Last mean normalised NAV per group (the no-JavaScript view of the curves)."""
    last = curves.sort_values("date").groupby(["agent", "mode", "mask"], sort=True).tail(1)
    keys = last[["agent", "mode", "mask"]].itertuples(index=False, name=None)
    out = last.assign(group=[tables.group_label(*k) for k in keys])
    out = out.sort_values("group", kind="stable")
    return out[["group", "date", "n_seeds", "mean", "std"]].rename(
        columns={"date": "last common date", "mean": "final NAV / cash", "std": "std"}
    )


def equity_section(run: RunData, options: ReportOptions) -> Section:
    """Seed-averaged equity curves per window (one figure per LLM mode)."""
    curves, bench = tables.equity_curves(run), tables.benchmark_curves(run)
    if curves.empty:
        return Section("Equity curves", note("No finished episodes yet."))
    parts = [
        note(
            "NAV / initial cash, averaged across seeds on the dates every seed reached; "
            "dashed: the benchmark index, 1 on the day before the window."
        )
    ]
    for (start, end), window in curves.groupby(["window_start", "window_end"], dropna=False):
        label = tables.window_label(start, end)
        in_window = (bench["window_start"] == start) & (bench["window_end"] == end)
        for suffix, group in _figure_groups(window, tables.spec_modes(run)):
            fig = figures.equity_figure(group, bench[in_window], f"{label}{suffix}")
            parts.append(figure_html(fig))
        parts.append(table(_final_values(window), classes={"std": "num"}))
    return Section("Equity curves", "".join(parts))


def panel_section(run: RunData, options: ReportOptions) -> Section:
    """The metric panel, mean ± std across seeds, the index at its return rank."""
    panel = tables.metric_panel(run.summary)
    if panel.empty:
        return Section("Metric panel", note("No finished episodes yet."))
    shown = panel[["rank", "agent", "mode", "mask", "n"]].copy()
    for m in METRIC_COLUMNS:
        pairs = zip(panel[f"{m}_mean"], panel[f"{m}_std"], strict=True)
        shown[m] = [mean_std(a, b) for a, b in pairs]
    rows = ["benchmark" if b else "" for b in panel["is_benchmark"]]
    greedy = set(tables.greedy_seed_agents(run))
    if greedy:
        shown["n"] = [
            f"{n} (T=0)" if a in greedy and k == "llm" else str(n)
            for a, k, n in zip(panel["agent"], panel["kind"], panel["n"], strict=True)
        ]
    intro = note(
        "Mean across finished episodes (seeds and windows) ± sample std; sorted by mean "
        "total return, so the highlighted benchmark index sits at its return-implied rank."
    ) + _greedy_note(greedy)
    classes = dict.fromkeys((*METRIC_COLUMNS, "n"), "num")
    return Section("Metric panel", intro + table(shown, classes=classes, row_classes=rows))


def _greedy_note(agents: set[str]) -> str:
    """The warning beside cells whose seeds are not independent samples."""
    if not agents:
        return ""
    names = ", ".join(sorted(agents))
    return note(
        f"(T=0): {names} ran at temperature 0, so their seeds only reshuffle the masks' "
        "aliases (identical prompts under bright): the spread across seeds is not sampling "
        "variance."
    )


def matrix_section(run: RunData, options: ReportOptions) -> Section:
    """Mean total return and Sharpe per (mode, mask) cell for each LLM agent."""
    agents = tables.llm_agents(run.summary)
    if not agents:
        return Section("Mode × mask matrix", note("No finished LLM episodes in this run."))
    parts = []
    modes = tables.spec_modes(run)
    for agent in agents:
        means = {
            "mean total return": tables.mode_mask_matrix(
                run.summary, agent, "total_return", modes=modes
            ),
            "mean Sharpe": tables.mode_mask_matrix(run.summary, agent, "sharpe", modes=modes),
        }
        counts = tables.mode_mask_matrix(
            run.summary, agent, "total_return", how="count", modes=modes
        )
        parts.append(f"<h3>{esc(agent)}</h3>")
        if agent in set(tables.greedy_seed_agents(run)):
            parts.append(_greedy_note({agent}))
        for name, matrix in [*means.items(), ("episodes", counts)]:
            parts.append(f"<h4>{esc(name)}</h4>" + table(matrix, index=True))
        parts.append(figure_html(figures.mode_mask_heatmaps(means, agent)))
    return Section("Mode × mask matrix", "".join(parts))


def rejection_section(run: RunData, options: ReportOptions) -> Section:
    """Orders, rejections and reject-code counts per agent."""
    counts = tables.rejection_counts(run)
    if counts.empty:
        return Section("Rejected orders", note("No finished episodes yet."))
    parts = [
        note("Finished episodes; a code counts on every order carrying it (partial fills too)."),
        table(counts),
    ]
    if len(counts.columns) > 4:
        parts.append(figure_html(figures.rejection_bars(counts)))
    return Section("Rejected orders", "".join(parts))


def usage_section(run: RunData, options: ReportOptions) -> Section:
    """Token and cost totals per LLM agent (every episode, finished or not)."""
    usage = tables.usage_totals(run.summary)
    if usage.empty:
        return Section("Tokens and cost", note("No LLM episodes in this run."))
    rows = ["total" if a == "all agents" else "" for a in usage["agent"]]
    body = note("Sums over every LLM episode, including unfinished ones.")
    return Section("Tokens and cost", body + table(usage, row_classes=rows))


def faults_section(run: RunData, options: ReportOptions) -> Section | None:
    """Endpoint faults by kind, HTTP retries and seconds waited per LLM cell; left out of
    runs without model episodes."""
    faults = tables.fault_totals(run.summary)
    if faults.empty:
        return None
    title = "Endpoint faults"
    counts = faults.drop(columns=["cell", "agent", "mode", "mask", "episodes"])
    if counts.isna().all().all():
        return Section(title, note("Not recorded: these episodes were written before faults were."))
    rows = ["total" if c == "all cells" else "" for c in faults["cell"]]
    body = note(
        "Sums over the cell's episodes of the transient faults the endpoint answered "
        "with (HTTP 429; retryable 5xx; timeouts; dropped connections; other retryable "
        "statuses 408/409/425), the HTTP retries they caused, the seconds of backoff slept "
        "(Retry-After honoured) and the seconds spent in failed attempts. Replies served "
        "from the cache meet no endpoint and count 0; null: not recorded."
    )
    shown = faults.drop(columns=["agent", "mode", "mask"])
    classes = {c: "num" for c in shown.columns if c != "cell"}
    return Section(title, body + table(shown, digits=3, classes=classes, row_classes=rows))


def rationale_section(run: RunData, options: ReportOptions) -> Section:
    """Seeded sample of order rationales per mask, as the model wrote them."""
    sample = tables.sample_rationales(run, options.samples_per_mask, options.sample_seed)
    if sample.empty:
        return Section("Sampled order rationales", note("No orders yet."))
    text = (
        f"Up to {options.samples_per_mask} orders per mask (seed {options.sample_seed}), "
        "preferring orders with a reason; stock_id as the model wrote it (masked), the real "
        "symbol for baselines."
    )
    sample = sample.assign(confidence=[fmt(c, 2) for c in sample["confidence"]])
    body = table(sample, classes={"reason": "reason", "confidence": "num"})
    return Section("Sampled order rationales", note(text) + body)


DEFAULT_SECTIONS: tuple[SectionBuilder, ...] = (
    overview_section,
    equity_section,
    panel_section,
    attribution_section,  # None unless `tradebench attribute` has run
    matrix_section,
    rejection_section,
    usage_section,
    faults_section,  # None unless the run has model episodes
    rationale_section,
)
"""The sections of `build_report`, in page order."""
