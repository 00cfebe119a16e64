"""The report's harness sections: one builder per section, `(RunData, ReportOptions) -> Section`.

A builder returns None to leave its section out. `COMMON_SECTIONS` (the run overview and
its episodes) suit every benchmark; `BROKER_SECTIONS` (equity, panel, mode x mask,
rejections, tokens, faults, model episodes, rationales, attribution) read the broker's
tables and columns, so they appear only for a benchmark with `broker_files`; a benchmark
adds its own through its `report_sections` (`sections_for`). Tables that compare episodes
compare them over the same decision days, or say where the days differ
(`report.horizons`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import yaml

from tradebench.report import costs, figures, tables
from tradebench.report.attribution_section import attribution_section
from tradebench.report.episode_section import model_episodes_section
from tradebench.report.gap_section import memory_gap_section
from tradebench.report.horizons import Horizon, full_length, horizons, short_episodes
from tradebench.report.html import Section, esc, figure_html, fmt, mean_std, note, table
from tradebench.report.load import RunData
from tradebench.report.ranking import (
    ANNUAL_FACTORS,
    MIN_ANNUALISED_DAYS,
    RANK_METRIC,
    days_flag,
    interval_text,
    rank_panel,
)
from tradebench.runs.summary import COMMON_COLUMNS, METRIC_COLUMNS, NOT_APPLICABLE, ordered


@dataclass(frozen=True)
class ReportOptions:
    """Knobs of a report."""

    samples_per_mask: int = 5
    """Order rationales sampled per mask level."""
    sample_seed: int = 0
    """Seed of the rationale sample."""
    reasons_per_episode: int = 3
    """Stated reasons shown per model episode (steps evenly spaced, first and last)."""
    rejections_per_episode: int = 10
    """Rejected submissions listed per model episode (the first ones)."""


SectionBuilder = Callable[[RunData, ReportOptions], Section | None]
"""A function that renders one section of the report, or None to skip it."""

__all__ = [
    "BROKER_SECTIONS",
    "COMMON_SECTIONS",
    "DEFAULT_SECTIONS",
    "ReportOptions",
    "SectionBuilder",
    "sections_for",
]


def overview_section(run: RunData, options: ReportOptions) -> Section:
    """Spec summary, episode counts by kind and status, the full spec."""
    counts = tables.status_counts(run.summary)
    parts = [
        "<h3>Episodes by kind and status</h3>",
        table(counts, index=True),
        "<h3>Spec</h3>",
    ]
    if run.spec:
        spec = tables.result_spec(run.spec)
        parts.append(
            note(
                "Transport settings (concurrency, budget, cache; each agent's base_url, "
                "api_key_env, timeout_s, max_attempts) are left out: they change how the "
                "run reached its models, not its results, so a replay shows the same page."
            )
        )
        parts.append(table(tables.spec_overview(spec)))
        dump = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)
        parts.append(f"<details><summary>resolved spec.yaml</summary><pre>{esc(dump)}</pre>")
        parts.append("</details>")
    else:
        parts.append(note("No spec.yaml in the run folder."))
    return Section("Run overview", "".join(parts))


def episodes_section(run: RunData, options: ReportOptions) -> Section:
    """Every episode with the harness's columns: agent, kind, mode, mask, seed, window,
    status and the steps it completed (from its record, or its journal while it runs)."""
    shown = run.summary[[c for c in COMMON_COLUMNS if c != "episode_id"]]
    done = int((run.summary["status"] == "done").sum())
    text = note(
        f"{done} of {len(shown)} episode(s) finished. steps: the steps each episode "
        "completed, as its record (or, while it runs, its journal) counts them."
    )
    rows = table(shown.rename(columns={"n_steps": "steps"}), classes={"steps": "num"})
    body = f"<details><summary>{len(shown)} episode(s)</summary>{rows}</details>"
    return Section("Episodes", text + body)


def _figure_groups(curves: pd.DataFrame, order: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """(title suffix, curves) per figure: one per LLM mode with the baselines in each."""
    modes = [m for m in ordered(curves["mode"], order) if m != NOT_APPLICABLE]
    if not modes:
        return [("", curves)]
    shared = curves[curves["mode"] == NOT_APPLICABLE]
    return [(f" · {m}", pd.concat([curves[curves["mode"] == m], shared])) for m in modes]


def _final_values(curves: pd.DataFrame) -> pd.DataFrame:
    """Last mean normalised NAV per group and the days its curve covers (the
    no-JavaScript view of the curves)."""
    keys = ["agent", "mode", "mask"]
    days = curves.groupby(keys, sort=True).size().rename("steps")
    last = curves.sort_values("date").groupby(keys, sort=True).tail(1)
    last = last.join(days, on=keys)
    labels = last[keys].itertuples(index=False, name=None)
    out = last.assign(group=[tables.group_label(*k) for k in labels])
    out = out.sort_values("group", kind="stable")
    return out[["group", "steps", "date", "n_seeds", "mean", "std"]].rename(
        columns={"date": "last common date", "mean": "final NAV / cash", "std": "std"}
    )


def _days_differ_note(values: pd.DataFrame) -> str:
    """The warning under a final-value table whose groups end on different days."""
    if values["steps"].nunique() <= 1:
        return ""
    counts = tables.step_counts(values["steps"])
    return note(
        f"The groups cover different numbers of decision days ({counts}): "
        "their final values are not comparable with each other. The metric panel ranks "
        "them over the same days."
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
            parts.append(figure_html(fig, f"equity {label}{suffix}"))
        values = _final_values(window)
        parts.append(table(values, classes={"std": "num"}) + _days_differ_note(values))
    return Section("Equity curves", "".join(parts))


def _panel_table(run: RunData, summary: pd.DataFrame) -> str:
    """The metric panel of `summary` as a table: the significance rank, the group, its
    decision days, `n`, its flags, every metric as mean ± std (annualised ones per day
    where the row ran too few days) and the interval of the mean total return, the index
    row highlighted (`report.ranking`)."""
    panel = rank_panel(run, summary, tables.metric_panel(summary))
    shown = panel[["rank", "agent", "mode", "mask"]].copy()
    shown["steps"] = tables.panel_steps(summary, panel)
    shown["n"] = panel["n"]
    shown["flags"] = panel["flags"]
    for m in METRIC_COLUMNS:
        pairs = zip(panel[f"{m}_mean"], panel[f"{m}_std"], strict=True)
        shown[m] = [mean_std(a, b) for a, b in pairs]
        if m in ANNUAL_FACTORS:
            shown[m] = [
                f"{t} per day" if d and t != "–" else t
                for t, d in zip(shown[m], panel["per_day"], strict=True)
            ]
        if m == RANK_METRIC:
            shown["interval"] = [
                interval_text(lo, hi, kind)
                for lo, hi, kind in zip(panel["low"], panel["high"], panel["interval"], strict=True)
            ]
    rows = ["benchmark" if b else "" for b in panel["is_benchmark"]]
    greedy = set(tables.greedy_seed_agents(run))
    if greedy:
        shown["n"] = [
            f"{n} (T=0)" if a in greedy and k == "llm" else str(n)
            for a, k, n in zip(panel["agent"], panel["kind"], panel["n"], strict=True)
        ]
    classes = dict.fromkeys((*METRIC_COLUMNS, "n", "steps", "interval"), "num")
    return table(shown, classes=classes, row_classes=rows) + _per_day_note(panel)


def _per_day_note(panel: pd.DataFrame) -> str:
    """The note under a panel whose rows show annualised metrics per day."""
    if not panel["per_day"].astype(bool).any():
        return ""
    names = ", ".join(ANNUAL_FACTORS)
    return note(
        f"per day: rows behind fewer than {MIN_ANNUALISED_DAYS} decision days show {names} "
        "as daily figures, not annualised (Sharpe and IR ÷ √252, turnover ÷ 252): scaled "
        "up from a few days to a year they would read as results they are not."
    )


def _labels(rows: pd.DataFrame) -> str:
    """The distinct group labels of summary rows, sorted."""
    keys = rows[["agent", "mode", "mask"]].itertuples(index=False, name=None)
    return ", ".join(sorted({tables.group_label(*k) for k in keys}))


def _horizon_block(run: RunData, horizon: Horizon) -> str:
    """One shorter horizon's ranking: everyone over the same first days."""
    days = "; ".join(
        f"{tables.window_label(r.window_start, r.window_end)}: {fmt(r.first_day)} → "
        f"{fmt(r.last_day)}"
        for r in horizon.days.itertuples(index=False)
    )
    text = (
        f"{len(horizon.short)} finished episode(s) ran {horizon.steps} decision days while "
        f"their window ran longer ({_labels(horizon.short)}). Here every finished episode of "
        f"at least {horizon.steps} days, the index included, is scored over the same first "
        f"{horizon.steps} decision days of its window ({days}): the metric panel recomputed "
        "from its recorded steps, positions and orders."
    )
    if horizon.left_out:
        text += f" Left out (no broker tables, or other days): {', '.join(horizon.left_out)}."
    head = f"<h3>First {horizon.steps} decision days</h3>"
    return head + note(text) + _panel_table(run, horizon.summary)


def panel_section(run: RunData, options: ReportOptions) -> Section:
    """The metric panel, mean ± std across seeds, the index at its return rank, over the
    same decision days: full-length episodes together, each shorter length with everyone
    rescored over its days."""
    if run.done().empty:
        return Section("Metric panel", note("No finished episodes yet."))
    intro = note(
        "Mean across finished episodes (seeds and windows) ± sample std. rank: 1 + the "
        "rows whose total return is significantly higher (paired comparisons over seeds, "
        "else over the same days, Holm-adjusted at 5%, as on the leaderboard), so rows the "
        "data cannot separate share a rank; the highlighted benchmark index is ranked the "
        "same way. interval: the 95% interval of the mean total return (over seeds, else "
        "over days; – for none). flags: no trades (no order filled), all fallbacks (the "
        f"model fell back on every step), one seed, N days (under {MIN_ANNUALISED_DAYS} "
        "decision days). steps: the decision days behind each row."
    ) + _greedy_note(set(tables.greedy_seed_agents(run)))
    extra = horizons(run)
    if not extra:
        return Section("Metric panel", intro + _panel_table(run, run.summary))
    short = short_episodes(run.summary[run.summary["episode_id"].isin(list(run.steps))])
    warning = note(
        f"Not every episode ran the same number of decision days: {len(short)} finished "
        f"episode(s) ({_labels(short)}) stopped before their window's end. Returns over "
        "fewer days do not rank against returns over more, so this first table ranks only "
        "the episodes that ran their whole window; each shorter length has its own ranking "
        "below, every longer episode and the index rescored over the same first days."
    )
    parts = [intro, warning, "<h3>Full windows</h3>", _panel_table(run, full_length(run.summary))]
    parts += [_horizon_block(run, h) for h in extra]
    return Section("Metric panel", "".join(parts))


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
            **_sharpe_matrix(run, agent, modes),
        }
        counts = tables.mode_mask_matrix(
            run.summary, agent, "total_return", how="count", modes=modes
        )
        parts.append(f"<h3>{esc(agent)}</h3>")
        if agent in set(tables.greedy_seed_agents(run)):
            parts.append(_greedy_note({agent}))
        parts.append(_cell_days_note(run, agent))
        for name, matrix in [*means.items(), ("episodes", counts)]:
            parts.append(f"<h4>{esc(name)}</h4>" + table(matrix, index=True))
        parts.append(figure_html(figures.mode_mask_heatmaps(means, agent), f"matrix {agent}"))
    return Section("Mode × mask matrix", "".join(parts))


def _sharpe_matrix(run: RunData, agent: str, modes: list[str]) -> dict[str, pd.DataFrame]:
    """The agent's mean Sharpe per cell: annualised, or per day (÷ √252) when any of its
    finished episodes ran fewer than `MIN_ANNUALISED_DAYS` decision days."""
    sharpe = tables.mode_mask_matrix(run.summary, agent, "sharpe", modes=modes)
    done = run.done()
    days = done.loc[(done["kind"] == "llm") & (done["agent"] == agent), "n_steps"]
    if len(days) and int(days.min()) < MIN_ANNUALISED_DAYS:
        title = f"mean Sharpe per day (not annualised: {days_flag(int(days.min()))})"
        return {title: sharpe / ANNUAL_FACTORS["sharpe"]}
    return {"mean Sharpe": sharpe}


def _cell_days_note(run: RunData, agent: str) -> str:
    """The warning beside a matrix whose cells cover different decision days."""
    done = run.done()
    mine = done[(done["kind"] == "llm") & (done["agent"] == agent)]
    by_window = mine.groupby(["window_start", "window_end"], dropna=False)["n_steps"]
    if (by_window.nunique() <= 1).all():
        return ""
    return note(
        f"The cells' episodes ran different numbers of decision days "
        f"({tables.step_counts(mine['n_steps'])}): compare cells of equal days only "
        "(the metric panel ranks them over the same days)."
    )


def rejection_section(run: RunData, options: ReportOptions) -> Section:
    """Orders, rejections and reject-code counts per agent."""
    counts = tables.rejection_counts(run)
    if counts.empty:
        return Section("Rejected orders", note("No finished episodes yet."))
    done = run.done()
    days = done[done["kind"] != "benchmark"].groupby("agent")["n_steps"].sum()
    shown = counts.copy()
    shown.insert(1, "decision days", [int(days.get(a, 0)) for a in counts["agent"]])
    parts = [
        note(
            "Finished episodes; a code counts on every order carrying it (partial fills "
            "too). decision days: the steps the counts are over (agents that ran fewer "
            "days had fewer chances to be rejected)."
        ),
        table(shown),
    ]
    if len(counts.columns) > 4:
        parts.append(figure_html(figures.rejection_bars(counts), "rejections"))
    return Section("Rejected orders", "".join(parts))


def usage_section(run: RunData, options: ReportOptions) -> Section:
    """Token and cost totals per LLM agent (every episode, finished or not)."""
    usage = tables.usage_totals(run.summary)
    if usage.empty:
        return Section("Tokens and cost", note("No LLM episodes in this run."))
    rows = ["total" if a == "all agents" else "" for a in usage["agent"]]
    cost = usage["cost_usd"]
    if len(usage) > 1 and cost.iloc[:-1].isna().any():  # a total over an unknown is unknown
        cost = cost.where(usage["agent"] != "all agents", float("nan"))
    usage = usage.assign(cost_usd=[costs.cost_text(c) for c in cost])
    body = note(
        "Sums over every LLM episode, including unfinished ones. cost_usd is unknown where "
        "the model had no price (never counted as 0)."
    )
    parts = [body, table(usage, row_classes=rows, classes={"cost_usd": "num"})]
    quotes = costs.price_quotes(run.run_dir)
    if quotes:
        parts.append("<h3>Prices used</h3>")
        parts.append(
            note(
                "USD per million tokens, per model: the spec's price table (or --price) when "
                "it has the model, else genai-prices as of the day shown (the date the price "
                "took effect in that source where it lists one); large requests: every token "
                "of a request above that many input tokens pays the higher rates."
            )
        )
        parts.append(table(costs.price_table(quotes)))
    return Section("Tokens and cost", "".join(parts))


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
        "(Retry-After honoured), the seconds spent in failed attempts, and the steps down "
        "the forced-call ladder (tool_choice_fallbacks: a tool_choice form the endpoint "
        "rejected or ignored, sent again in a weaker form). Replies served from the cache "
        "meet no endpoint and count 0; null: not recorded."
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


COMMON_SECTIONS: tuple[SectionBuilder, ...] = (overview_section, episodes_section)
"""The sections of every benchmark's report, first."""
BROKER_SECTIONS: tuple[SectionBuilder, ...] = (
    equity_section,
    panel_section,
    attribution_section,  # None unless `tradebench attribute` has run
    matrix_section,
    memory_gap_section,  # None unless a model ran under bright and a blinded mask
    rejection_section,
    usage_section,
    faults_section,  # None unless the run has model episodes
    model_episodes_section,  # None unless the run has model episodes
    rationale_section,
)
"""The sections of a benchmark with `broker_files`, after the common ones."""
DEFAULT_SECTIONS: tuple[SectionBuilder, ...] = COMMON_SECTIONS + BROKER_SECTIONS
"""The sections of `build_report` for a folder whose benchmark is not known (a
`tradebench backtest` folder trades through the broker), in page order."""


def sections_for(benchmark: Any) -> tuple[SectionBuilder, ...]:
    """A benchmark's report: the common sections, the broker ones when it has
    `broker_files`, then its own `report_sections`."""
    broker = BROKER_SECTIONS if getattr(benchmark, "broker_files", False) else ()
    return (*COMMON_SECTIONS, *broker, *tuple(getattr(benchmark, "report_sections", ())))
