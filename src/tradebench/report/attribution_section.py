"""Report section: return attribution per agent, style exposures, factor-model IC.

Reads what `tradebench attribute RUN_DIR` wrote (`attribution_summary.parquet`, joined to
the run's summary on `episode_id`, and the per-window `attribution/*.json` records); the
section leaves itself out when the run has not been attributed. Definitions:
`docs/attribution.md`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from tradebench.report.html import Section, figure_html, note, table
from tradebench.report.load import RunData
from tradebench.report.tables import GROUP_KEYS, group_label

if TYPE_CHECKING:
    from tradebench.report.sections import ReportOptions

SUMMARY_FILE = "attribution_summary.parquet"
MODELS_DIR = "attribution"
COMPONENTS = ("common", "style", "selection", "trading")
COMPONENT_LABELS = {
    "common": "Common (market)",
    "style": "Style factors",
    "selection": "Selection alpha",
    "trading": "Trading (costs, fills)",
}
SIGNAL = ("ic", "rank_ic", "icir", "rank_icir", "ic_days")
TEMPLATE = "plotly_white"

__all__ = [
    "attribution_groups",
    "attribution_section",
    "cohort_exposures",
    "load_attribution",
    "ranking_table",
]


def load_attribution(run: RunData) -> pd.DataFrame | None:
    """The run's attribution summary, or None when the run was not attributed."""
    path = run.run_dir / SUMMARY_FILE
    if not path.exists():
        return None
    frame = pd.read_parquet(path)
    return frame if not frame.empty else None


def _factors(frame: pd.DataFrame) -> list[str]:
    return [c.removeprefix("exposure_") for c in frame.columns if c.startswith("exposure_")]


def attribution_groups(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean linked contributions, total return and exposures per group (seeds pooled)."""
    numeric = ["total_return", *COMPONENTS, *[f"exposure_{f}" for f in _factors(frame)]]
    numeric += [c for c in SIGNAL if c in frame.columns]
    grouped = frame.groupby([*GROUP_KEYS, "cohort"], sort=True, dropna=False)
    out = grouped[numeric].mean()
    out["n"] = grouped.size()
    out = out.reset_index()
    keys = out[["agent", "mode", "mask"]].itertuples(index=False, name=None)
    out.insert(0, "group", [group_label(*k) for k in keys])
    return out


def ranking_table(groups: pd.DataFrame) -> pd.DataFrame:
    """Groups ranked by selection alpha, beside their rank by total return."""
    out = groups[["group", "cohort", "selection", "total_return"]].copy()
    for col, by in (("rank by selection", "selection"), ("rank by total return", "total_return")):
        out[col] = out[by].rank(ascending=False, method="min").astype("Int64")
    out = out.sort_values(["rank by selection", "group"], kind="stable", na_position="last")
    cols = ["rank by selection", "group", "cohort", "selection"]
    cols += ["rank by total return", "total_return"]
    return out[cols].rename(
        columns={"selection": "selection alpha", "total_return": "total return"}
    )


def cohort_exposures(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean exposure per factor for each cohort (episodes pooled), plus episode counts."""
    cols = [f"exposure_{f}" for f in _factors(frame)]
    grouped = frame.groupby("cohort", sort=True)
    out = grouped[cols].mean()
    out.columns = [c.removeprefix("exposure_") for c in cols]
    out.insert(0, "episodes", grouped.size())
    return out.reset_index()


def _contribution_figure(groups: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for comp in COMPONENTS:
        fig.add_trace(go.Bar(name=COMPONENT_LABELS[comp], x=groups["group"], y=groups[comp]))
    fig.add_trace(
        go.Scatter(
            name="total return",
            x=groups["group"],
            y=groups["total_return"],
            mode="markers",
            marker={"symbol": "diamond", "size": 11, "color": "black"},
        )
    )
    fig.update_layout(
        barmode="relative",
        template=TEMPLATE,
        title="Cumulative contributions (Carino-linked, mean over episodes)",
        yaxis_title="contribution to total return",
        height=460,
    )
    return fig


def _exposure_heatmap(groups: pd.DataFrame, cohorts: pd.DataFrame, factors: list[str]) -> go.Figure:
    rows = [*groups["group"], *[f"cohort: {c}" for c in cohorts["cohort"]]]
    z = np.vstack(
        [
            groups[[f"exposure_{f}" for f in factors]].to_numpy(dtype=float),
            cohorts[factors].to_numpy(dtype=float),
        ]
    )
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=factors,
            y=rows,
            colorscale="RdBu",
            zmid=0.0,
            texttemplate="%{z:.2f}",
            hovertemplate="%{y} · %{x}: %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        title="Average style exposure of the invested book (z-score units)",
        height=180 + 32 * len(rows),
        yaxis={"autorange": "reversed"},
    )
    return fig


def _window_records(run: RunData) -> list[dict[str, Any]]:
    folder = run.run_dir / MODELS_DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def _model_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in records:
        dropped = [
            f"{d['factor']} ({d['reason']}"
            + ("" if d.get("vif") is None else f", VIF {d['vif']:.2f}")
            + ")"
            for d in r.get("dropped", [])
        ]
        vifs = ", ".join(f"{k} {v:.2f}" for k, v in (r.get("vif") or {}).items())
        rows.append(
            {
                "window": " → ".join(r.get("window", [])),
                "calibration": " → ".join(str(x) for x in r.get("calibration", [])),
                "kept (VIF)": vifs,
                "dropped": "; ".join(dropped) or "none",
                "days fitted": r.get("days_fitted"),
                "mean names": r.get("mean_names"),
                "mean R²": r.get("mean_r2"),
            }
        )
    return pd.DataFrame(rows)


def _signal_table(groups: pd.DataFrame) -> pd.DataFrame | None:
    if "ic" not in groups.columns:
        return None
    rows = groups[groups["cohort"] == "factor_model"]
    rows = rows[rows["ic"].notna()]
    if rows.empty:
        return None
    cols = ["group", "n", *[c for c in SIGNAL if c in rows.columns], "total_return", "selection"]
    return rows[cols].rename(columns={"ic": "IC", "rank_ic": "rank IC", "icir": "ICIR"})


def _intro(records: list[dict[str, Any]]) -> str:
    sources = sorted({str(r.get("amount_source")) for r in records if r.get("amount_source")})
    text = (
        "Each day's NAV return = Common + Style + Selection + Trading, with the weights held "
        "at the previous close: Common is the regression intercept times the invested share, "
        "Style the book's factor exposures times the day's factor returns, Selection the "
        "weighted residuals, Trading the NAV return minus the holdings' close-to-close return "
        "(costs, open-price fills, unadjusted corporate actions). Exposures use only data "
        "before each day; the regression is weighted by sqrt of 20-day traded amount over "
        "index members trading that day."
    )
    parts = [note(text)]
    for source in sources:
        parts.append(note(f"Traded amount: {source}."))
    return "".join(parts)


def attribution_section(run: RunData, options: ReportOptions) -> Section | None:
    """Contributions per agent, selection vs return ranking, exposures, factor-model IC."""
    frame = load_attribution(run)
    if frame is None:
        return None
    records = _window_records(run)
    groups = attribution_groups(frame)
    factors = _factors(frame)
    cohorts = cohort_exposures(frame)
    shown = groups[["group", "cohort", "n", "total_return", *COMPONENTS]]
    parts = [_intro(records), "<h3>Contributions per agent</h3>", table(shown)]
    parts.append(figure_html(_contribution_figure(groups)))
    parts += ["<h3>Ranking by selection alpha beside ranking by total return</h3>"]
    parts.append(table(ranking_table(groups)))
    if factors:
        parts += [
            "<h3>Style exposures</h3>",
            figure_html(_exposure_heatmap(groups, cohorts, factors)),
        ]
        exposures = groups[["group", *[f"exposure_{f}" for f in factors]]]
        parts.append(table(exposures.rename(columns=lambda c: c.removeprefix("exposure_"))))
        parts += ["<h4>By cohort</h4>", table(cohorts)]
    signal = _signal_table(groups)
    if signal is not None:
        parts += ["<h3>Factor-model signal quality (evaluation window)</h3>", table(signal)]
    if records:
        parts += ["<h3>Factor screen per window</h3>", table(_model_table(records))]
    return Section("Return attribution", "".join(parts))
