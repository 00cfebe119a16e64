"""The de-anonymisation probe as a report section: recovery table with intervals, chart.

Reads only the probe's stored summary (`summary.parquet` of a probe results folder:
one row per attacker x level x price mode x metric with `successes, n, rate, low, high,
random, n_probes, n_valid, n_failed`), so any report can include it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from tradebench.metrics.stats import binomial_greater
from tradebench.report.html import Section, figure_html, note, table

TEMPLATE = "plotly_white"
GROUP = ["attacker", "level", "price_mode"]
RANDOM_LABEL = "random guess"
TOP1 = "top1"

__all__ = ["probe_figure", "probe_section", "probe_section_from_dir", "recovery_table"]


def _pct(x: float) -> str:
    return "–" if pd.isna(x) else f"{100 * x:.1f}%"


def _cell(row: pd.Series) -> str:
    if row["n"] == 0:
        return "–"
    return (
        f"{_pct(row['rate'])} [{_pct(row['low'])}, {_pct(row['high'])}] "
        f"({row['successes']}/{row['n']}; random {_pct(row['random'])})"
    )


def _above_random(row: pd.Series) -> str:
    """`rate - random [low - random, high - random] (p = ...)`: top-1 recovery above a
    uniform guess, the Wilson interval shifted by the known random rate, and the exact
    one-sided binomial p-value of `successes` in `n` at the random rate."""
    if row["n"] == 0 or pd.isna(row["random"]):
        return "–"
    gap = row["rate"] - row["random"]
    p = binomial_greater(int(row["successes"]), int(row["n"]), float(row["random"]))
    return (
        f"{100 * gap:+.1f} pts [{100 * (row['low'] - row['random']):+.1f}, "
        f"{100 * (row['high'] - row['random']):+.1f}] (p = {p:.3g})"
    )


def recovery_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per attacker x level x price mode; a `rate [95% CI] (k/n; random)` per metric
    and the top-1 recovery minus random with its interval and p-value."""
    metrics = list(dict.fromkeys(summary["metric"]))
    rows = []
    for key, group in summary.groupby(GROUP, sort=True):
        by_metric = group.set_index("metric")
        first = group.iloc[0]
        row = dict(zip(["attacker", "level", "price mode"], key, strict=True))
        row["valid / attempts"] = f"{first['n_valid']}/{first['n_probes']}"
        row["failed (excluded)"] = int(first["n_failed"])
        row |= {m: _cell(by_metric.loc[m]) for m in metrics}
        if TOP1 in by_metric.index:
            row["top1 minus random [95% CI] (one-sided p)"] = _above_random(by_metric.loc[TOP1])
        rows.append(row)
    return pd.DataFrame(rows)


def probe_figure(summary: pd.DataFrame) -> go.Figure:
    """Grouped bars of each metric's rate with Wilson error bars, and the random guess."""
    fig = go.Figure()
    metrics = list(dict.fromkeys(summary["metric"]))
    for key, group in summary.groupby(GROUP, sort=True):
        g = group.set_index("metric").reindex(metrics)
        fig.add_trace(
            go.Bar(
                x=metrics,
                y=g["rate"],
                name=" · ".join(key),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": (g["high"] - g["rate"]).fillna(0),
                    "arrayminus": (g["rate"] - g["low"]).fillna(0),
                },
            )
        )
    random = summary.groupby("metric", sort=False)["random"].mean().reindex(metrics)
    fig.add_trace(go.Bar(x=metrics, y=random, name=RANDOM_LABEL, marker_color="#9aa0a6"))
    fig.update_layout(
        template=TEMPLATE,
        barmode="group",
        yaxis={"title": "recovery rate", "range": [0, 1.05], "tickformat": ".0%"},
        title="Recovery rate by attacker (95% Wilson intervals)",
        height=460,
    )
    return fig


def probe_section(
    summary: pd.DataFrame, failures: pd.DataFrame | None = None, title: str = "De-anonymisation"
) -> Section:
    """The recovery table, the chart and (optionally) the failure counts."""
    if summary.empty:
        return Section(title, note("No probe results."))
    parts = [
        note(
            "Share of masked payloads whose real ticker (top-1, top-5), date (within ±7 "
            "trading days of the last bar), ticker and date together (joint), sector and board "
            "an attacker recovered. Intervals are 95% Wilson intervals; replies that failed "
            "validation are excluded from the rates and counted. Random: a uniform guess. "
            "top1 minus random: the recovery rate above the uniform guess's expected rate, "
            "the Wilson interval shifted by it (the random rate is known, not estimated), "
            "and the exact one-sided binomial p-value of the hits at the random rate "
            "(conservative where probes' candidate counts differ)."
        ),
        table(recovery_table(summary)),
        figure_html(probe_figure(summary)),
    ]
    if failures is not None and not failures.empty:
        parts += ["<h3>Failures and validation</h3>", table(failures)]
    return Section(title, "".join(parts))


def probe_section_from_dir(results_dir: Path, title: str = "De-anonymisation") -> Section | None:
    """The section from a probe results folder's `summary.parquet`; None when absent."""
    path = Path(results_dir) / "summary.parquet"
    if not path.exists():
        return None
    return probe_section(pd.read_parquet(path), title=title)
