"""Plotly figures of the report, built from the tables in `report.tables`.

Figures hold no HTML: plotly serialises labels as JSON with `<`, `>` and `/` escaped,
and the page embeds plotly.js once (`report.html`).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tradebench.report.tables import BENCHMARK_LABEL, group_label

TEMPLATE = "plotly_white"
"""Plotly layout template of every figure."""

__all__ = ["equity_figure", "mode_mask_heatmaps", "rejection_bars"]


def equity_figure(curves: pd.DataFrame, benchmark: pd.DataFrame, title: str) -> go.Figure:
    """Mean normalised NAV per group (one line each) and the benchmark index (dashed).

    `curves` holds the rows of one window from `tables.equity_curves`, `benchmark`
    the same window's rows from `tables.benchmark_curves`.
    """
    fig = go.Figure()
    for (agent, mode, mask), line in curves.groupby(["agent", "mode", "mask"], sort=True):
        fig.add_trace(
            go.Scatter(
                x=line["date"],
                y=line["mean"],
                mode="lines",
                name=group_label(agent, mode, mask),
                customdata=line[["std", "n_seeds"]].to_numpy(),
                hovertemplate="%{x|%Y-%m-%d}: %{y:.4f} (std %{customdata[0]:.4f}, "
                "seeds %{customdata[1]})<extra>%{fullData.name}</extra>",
            )
        )
    if not benchmark.empty:
        fig.add_trace(
            go.Scatter(
                x=benchmark["date"],
                y=benchmark["value"],
                mode="lines",
                name=BENCHMARK_LABEL,
                line={"dash": "dash", "color": "black"},
            )
        )
    fig.update_layout(
        title=title,
        template=TEMPLATE,
        yaxis_title="NAV / initial cash",
        hovermode="x unified",
        height=460,
        legend={"orientation": "v"},
    )
    return fig


def mode_mask_heatmaps(matrices: dict[str, pd.DataFrame], title: str) -> go.Figure:
    """Side-by-side heatmaps of mode x mask matrices, one per metric name."""
    fig = make_subplots(rows=1, cols=len(matrices), subplot_titles=list(matrices))
    for col, matrix in enumerate(matrices.values(), start=1):
        fig.add_trace(
            go.Heatmap(
                z=matrix.to_numpy(dtype=float),
                x=list(matrix.columns),
                y=list(matrix.index),
                colorscale="RdYlGn",
                zmid=0.0,
                texttemplate="%{z:.3f}",
                showscale=False,
                hovertemplate="mode %{y}, mask %{x}: %{z:.4f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    rows = max(len(m.index) for m in matrices.values())
    fig.update_layout(title=title, template=TEMPLATE, height=160 + 60 * rows)
    return fig


def rejection_bars(table: pd.DataFrame) -> go.Figure:
    """Stacked bars of reject-code counts per agent (the code columns of
    `tables.rejection_counts`)."""
    codes = [c for c in table.columns if c not in ("agent", "orders", "rejected", "partial")]
    fig = go.Figure(
        [go.Bar(name=code, x=table["agent"], y=table[code]) for code in codes],
    )
    fig.update_layout(
        barmode="stack",
        template=TEMPLATE,
        title="Orders carrying each reject code",
        yaxis_title="orders",
        height=420,
    )
    return fig
