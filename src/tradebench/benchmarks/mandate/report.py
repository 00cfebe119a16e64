"""The mandate benchmark's report sections (registered through `report_sections`).

Equity curves, the metric panel and the model sections come from the generic sections
(the episodes write the same steps, positions and orders tables as the portfolio
benchmark); these add the cost-sensitivity curve, the constraint adherence with the
citation violations, the robustness tables and the contamination certificate. Each reads
the episode folders' artefacts (`benchmarks/mandate/artefacts.py`, `certificate.py`),
plus the compiled mandate read back, the held-book drift, the analyst swap table and the
"blank the top-attribution name" stress.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape

import pandas as pd
import plotly.graph_objects as go

from tradebench.benchmarks.mandate.certificate import read_certificates, run_table
from tradebench.report.html import Section, figure_html, note, table
from tradebench.report.load import RunData
from tradebench.runs.store import read_parquet

SURVIVORSHIP = (
    "Pools are chosen from the point-in-time index members at the window start, but the "
    "shared US bars hold only today's S&P 500 members and the sectors are today's GICS "
    "sectors: survivorship-biased. The index reference is SPY (the dataset's index "
    "series), bought through the same broker."
)


def _label(row: pd.Series) -> str:
    mode = row["mode"] if row["mode"] != "n/a" else "reference"
    return f"{row['agent']} · {mode} · s{row['seed']}"


def _collect(run: RunData, name: str) -> pd.DataFrame:
    """One artefact of every finished episode, tagged with its label and episode id."""
    frames = []
    for _, row in run.done().iterrows():
        path = run.episode_dir(row["episode_id"]) / f"{name}.parquet"
        if path.exists():
            part = read_parquet(path)
            frames.append(part.assign(episode=_label(row), episode_id=row["episode_id"]))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def cost_curve_section(run: RunData, options: object) -> Section | None:
    """Net total return of each episode's decisions re-executed at each half-spread."""
    curves = _collect(run, "cost_curve")
    if curves.empty:
        return None
    fig = go.Figure()
    for label, group in curves.groupby("episode", sort=True):
        fig.add_trace(go.Scatter(x=group["cost_bps"], y=group["total_return"], name=label))
    fig.update_layout(
        title="Cost sensitivity", xaxis_title="half-spread (bps)", yaxis_title="total return"
    )
    wide = curves.pivot_table(
        index="episode", columns="cost_bps", values="total_return", aggfunc="first"
    )
    wide.columns = [f"{c:g} bps" for c in wide.columns]
    body = [
        note(
            "The same target weights re-executed through the broker at each half-spread "
            "(buys pay it, sells receive it less; commission 0). " + SURVIVORSHIP
        ),
        figure_html(fig, "mandate cost curve"),
        table(wide, index=True),
    ]
    return Section("Mandate: cost sensitivity", "".join(body))


def adherence_section(run: RunData, options: object) -> Section | None:
    """How often each constraint bound, how far proposals were moved, citation violations."""
    rows = _collect(run, "adherence")
    done = run.done()
    if rows.empty and "citation_violations" not in done:
        return None
    parts = [
        note(
            "Per rebalance and constraint: binding = active at the projected portfolio; "
            "violated = broken by the constructor's proposal. Rates are over the episode's "
            "rebalances."
        )
    ]
    if not rows.empty:
        per = (
            rows.groupby(["episode", "constraint"], sort=True)
            .agg(
                steps_binding=("step", lambda s: s[rows.loc[s.index, "binding"]].nunique()),
                steps_violated=("step", lambda s: s[rows.loc[s.index, "violated"]].nunique()),
                mean_gap=("proposed", lambda s: (s - rows.loc[s.index, "projected"]).abs().mean()),
            )
            .reset_index()
        )
        parts.append(table(per))
    cols = [c for c in ("rebalances", "citation_violations", "invalid_proposals") if c in done]
    if cols:
        view = done.assign(episode=done.apply(_label, axis=1))[["episode", *cols]].dropna()
        parts += ["<h3>Rebalances, citation violations, refused proposals</h3>", table(view)]
    return Section("Mandate: constraint adherence", "".join(parts))


def robustness_section(run: RunData, options: object) -> Section | None:
    """Spread over same-pool equal weight: whole, leave-one-name-out, bootstrap interval."""
    boot = _collect(run, "spread_bootstrap")
    if boot.empty:
        return None
    loo = _collect(run, "loo_spread")
    spread = loo[loo["left_out"].isna()][["episode", "spread"]]
    worst = (
        loo[loo["left_out"].notna()]
        .groupby("episode")["spread"]
        .agg(loo_min="min", loo_max="max")
        .reset_index()
    )
    boot = boot[boot["statistic"] == "sum_daily_spread"]
    view = (
        boot[["episode", "estimate", "lo", "hi", "n_days"]]
        .merge(spread, on="episode")
        .merge(worst, on="episode")
    )
    pnl = _collect(run, "pnl_by_name")
    top = pnl.sort_values(["episode", "contribution"], ascending=[True, False])
    parts = [
        note(
            "spread = total return minus the same-pool equal-weight reference's (same "
            "cadence, same broker, no critic); loo_min/max: the spread with one name's P&L "
            "removed from both; estimate, lo, hi: the summed daily return spread and its "
            "95% bootstrap interval over days."
        ),
        table(view),
        "<h3>P&amp;L contribution by name</h3>",
        table(top[["episode", "symbol", "contribution", "ew_contribution"]]),
    ]
    return Section("Mandate: robustness", "".join(parts))


def mandate_section(run: RunData, options: object) -> Section | None:
    """The mandate as written, who compiled it, its constraints read back, its hashes."""
    path = run.run_dir / "mandate.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    rows = pd.DataFrame(
        [
            {"field": "compiler", "value": record.get("compiler")},
            {"field": "model", "value": record.get("model") or ""},
            {"field": "constraints_hash", "value": record.get("constraints_hash")},
            {"field": "sha256 (text + constraints)", "value": record.get("sha256")},
        ]
    )
    body = [
        "<h3>As written</h3>",
        f"<pre>{escape(str(record.get('mandate', '')))}</pre>",
        "<h3>Compiled constraints, read back</h3>",
        f"<pre>{escape(str(record.get('rendered', '')))}</pre>",
        table(rows),
    ]
    return Section("Mandate: compiled constraints", "".join(body))


def pool_section(run: RunData, options: object) -> Section | None:
    """How each pool was chosen: rule, analyst set, weights, IC validation window, names."""
    paths = sorted((run.run_dir / "pools").glob("*.json"))
    if not paths:
        return None
    rows = []
    for path in paths:
        c = json.loads(path.read_text())
        rows.append(
            {
                "day": c["day"],
                "analyst_set": c["analyst_set"],
                "K": c["size"],
                "rule": c["rule"],
                "weighting": c.get("weighting") or "",
                "weights": ", ".join(f"{k} {v:.2f}" for k, v in c.get("weights", {}).items()),
                "ic_window": " .. ".join(c.get("validation") or []),
                "candidates": c["candidates"],
                "names": ", ".join(c["names"]),
                "note": c.get("note", ""),
            }
        )
    text = (
        "analysts: the K candidates with the highest weighted mean of score x confidence "
        "over the set's analysts at the first decision instant (ic: weights from each "
        "analyst's mean daily rank IC over the stated window, before the window); random: "
        "the seeded control."
    )
    return Section("Mandate: pools", note(text) + table(pd.DataFrame(rows)))


def drift_section(run: RunData, options: object) -> Section | None:
    """Per episode and day: the held book's breaches beside the projection's."""
    drift = _collect(run, "drift")
    if drift.empty:
        return None
    per = (
        drift.groupby("episode", sort=True)
        .agg(
            days=("step", "size"),
            held_days_breached=("breaches", lambda b: int((b > 0).sum())),
            held_max_excess=("max_excess", "max"),
            rebalances=("rebalance", "sum"),
            drift_rebalances=("drift_rebalance", "sum"),
            projection_breaches=("projection_breaches", lambda b: int(b.fillna(0).sum())),
        )
        .reset_index()
    )
    worst = drift[drift["breaches"] > 0][["episode", "date", "cash", "largest", "worst"]]
    parts = [
        note(
            "Held book = the weights marked at each close; a breach is a bound broken by "
            "more than `drift_tolerance`. The projection's column checks the targets the "
            "critic sent on rebalance days (0 by construction up to whole-share rounding). "
            "Under `once` the book drifts with prices; `drift_control` rebalances it."
        ),
        table(per),
    ]
    if not worst.empty:
        parts += ["<h3>Days the held book broke a bound</h3>", table(worst.head(200))]
    return Section("Mandate: held-book drift", "".join(parts))


def swap_table(run: RunData) -> pd.DataFrame:
    """Net total return by (cadence, K, seed, analyst set) x constructor, with the 95%
    bootstrap interval of the summed daily return: the analyst swap."""
    done = run.done()
    if "analyst_set" not in done or done["analyst_set"].isna().all():
        return pd.DataFrame()
    rows = done[done["analyst_set"].notna()]

    def cell(r: pd.Series) -> str:
        return (
            f"{r['total_return']:+.2%} [{r['daily_return_lo']:+.2%}, {r['daily_return_hi']:+.2%}]"
        )

    rows = rows.assign(cell=rows.apply(cell, axis=1))
    wide = rows.pivot_table(
        index=["cadence", "pool_size", "seed", "analyst_set"],
        columns="agent",
        values="cell",
        aggfunc="first",
    )
    ew = rows.groupby(["cadence", "pool_size", "seed", "analyst_set"])["ew_total_return"].first()
    wide["same-pool EW"] = ew.map(lambda x: f"{x:+.2%}")
    return wide.reset_index()


def _mean_gap(frame: pd.DataFrame) -> float:
    """Mean |difference| between the rows of each column, over every pair and column."""
    gaps = [
        abs(a - b)
        for col in frame.columns
        for i, a in enumerate(frame[col])
        for b in frame[col].iloc[i + 1 :]
    ]
    return float(sum(gaps) / len(gaps)) if gaps else float("nan")


def swap_effects(run: RunData) -> pd.DataFrame:
    """Per cadence, K and seed: the mean absolute difference in net total return between
    analyst sets under the same constructor (`analyst_effect`) and between constructors
    on the same set's captures (`constructor_effect`)."""
    done = run.done()
    rows = done[done["analyst_set"].notna()] if "analyst_set" in done else done.iloc[0:0]
    out = []
    for key, cell in rows.groupby(["cadence", "pool_size", "seed"], sort=True):
        wide = cell.pivot_table(index="analyst_set", columns="agent", values="total_return")
        out.append(
            {
                "cadence": key[0],
                "pool_size": key[1],
                "seed": key[2],
                "analyst_effect": _mean_gap(wide),
                "constructor_effect": _mean_gap(wide.T),
            }
        )
    return pd.DataFrame(out)


def swap_section(run: RunData, options: object) -> Section | None:
    """The analyst swap: each analyst set's captures under every constructor."""
    wide = swap_table(run)
    done = run.done()
    if wide.empty or done["analyst_set"].nunique() < 2:
        return None
    parts = [
        note(
            "Each analyst set's frozen captures replayed under every constructor (same "
            "pool, same bytes). Cell: net total return [95% bootstrap interval of the "
            "summed daily return]. The same-pool equal-weight column is over the pool that "
            "set's analysts chose. Analyst quality matters more than constructor choice "
            "when rows differ more than columns."
        ),
        table(wide),
        note(
            "analyst_effect: mean |difference| in net total return between analyst sets "
            "under the same constructor; constructor_effect: between constructors on the "
            "same set's captures. One window's returns, no interval: read with the cells'."
        ),
        table(swap_effects(run)),
    ]
    return Section("Mandate: analyst swap", "".join(parts))


def stress_section(run: RunData, options: object) -> Section | None:
    """The spread with the top-attribution name blanked."""
    stress = _collect(run, "stress_blank_top")
    if stress.empty:
        return None
    cols = ["episode", "name", "contribution", "total_return", "blanked_return"]
    cols += ["ew_total_return", "ew_blanked_return", "spread", "blanked_spread"]
    parts = [
        note(
            "The name of largest P&L contribution is blanked (its weight left in cash) in "
            "the episode's targets and in the same-pool equal-weight reference, and both "
            "are re-executed through the broker: does the edge survive without it?"
        ),
        table(stress[cols]),
    ]
    return Section("Mandate: blank the top-attribution name", "".join(parts))


CERTIFICATE_SCOPE = (
    "The certificate audits what each agent was shown: every record id cited in the "
    "captures it read, checked against the dataset (gate: available by the decision "
    "instant of the day it was shown; provenance: no later date named outside a "
    "forward-looking sentence, no filing accepted before its period ended). It cannot "
    "prove what a model memorised in training: that rests on the model's stated "
    "knowledge cutoff, so a model without a declared cutoff, or one within the margin of "
    "the window start, is UNKNOWN, the honest default. The date reading is a documented "
    "heuristic (docs/mandate.md); uncited records behind the news counts are not audited."
)


def certificate_section(run: RunData, options: object) -> Section | None:
    """The contamination verdict per model and for the run, with every reason."""
    certs = read_certificates(run.run_dir)
    if not certs:
        return None
    table_ = run_table(certs)
    per = table_.drop(columns=["reasons"])
    reasons = pd.DataFrame(
        [
            {
                "agent": c.agent,
                "episode": c.episode_id,
                "verdict": r.verdict,
                "rule": r.rule,
                "record_id": r.record_id,
                "day": r.day,
                "evidence": r.evidence,
            }
            for c in certs
            for r in c.reasons
        ]
    )
    scans = pd.DataFrame(
        [
            {
                "episode": c.episode_id,
                "text_scan": c.text_scan,
                "records_shown": c.records_shown,
                "undated_records": c.undated_records,
                "unresolved_records": c.unresolved_records,
                "forward_mentions": c.forward_mentions,
            }
            for c in certs
        ]
    )
    parts = [note(CERTIFICATE_SCOPE), table(per), "<h3>What the text scan read</h3>"]
    parts += [note(certs[0].scan_limits), table(scans)]
    if not reasons.empty:
        parts += ["<h3>Reasons</h3>", table(reasons)]
    return Section("Mandate: contamination certificate", "".join(parts))


REPORT_SECTIONS: tuple[Callable[..., Section | None], ...] = (
    mandate_section,
    pool_section,
    cost_curve_section,
    adherence_section,
    drift_section,
    robustness_section,
    stress_section,
    swap_section,
    certificate_section,
)
