"""The accuracy-by-month curve: Wilson intervals, the chance line, the blinded control and
the measured horizon with its bootstrap interval. Written as a static HTML file (plotly
embedded, no network) and as PNG when kaleido is installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import plotly.graph_objects as go

from tradebench.benchmarks.horizon.curve import Horizon, MonthRow


def _bars(rows: list[MonthRow]) -> dict[str, list[float]]:
    return {
        "array": [r.high - r.accuracy for r in rows],
        "arrayminus": [r.accuracy - r.low for r in rows],
    }


def horizon_figure(h: Horizon) -> go.Figure:
    """One agent's curve with its controls and the horizon marked."""
    fig = go.Figure()
    curve = [r for r in h.months if r.role == "curve"]
    after = [r for r in h.months if r.role != "curve"]
    fig.add_scatter(
        x=[r.month for r in curve],
        y=[r.accuracy for r in curve],
        error_y=_bars(curve),
        mode="lines+markers",
        name="accuracy (95% Wilson)",
    )
    if after:
        fig.add_scatter(
            x=[r.month for r in after],
            y=[r.accuracy for r in after],
            error_y=_bars(after),
            mode="markers",
            marker={"color": "grey"},
            name="after serving date (control)",
        )
    if h.blinded_months:
        b = h.blinded_months
        fig.add_scatter(
            x=[r.month for r in b],
            y=[r.accuracy for r in b],
            mode="markers",
            marker={"symbol": "x", "color": "purple"},
            name="blinded (control)",
        )
    fig.add_scatter(
        x=[r.month for r in h.months],
        y=[r.chance for r in h.months],
        mode="lines",
        line={"dash": "dash", "color": "black"},
        name="chance",
    )
    if h.horizon_low and h.horizon_high:
        fig.add_shape(
            type="rect",
            x0=h.horizon_low,
            x1=h.horizon_high,
            y0=0,
            y1=1,
            yref="paper",
            fillcolor="orange",
            opacity=0.2,
            line_width=0,
        )
    if h.horizon:
        label = f"horizon {h.horizon}" + (" (censored)" if h.censored else "")
        fig.add_shape(
            type="line", x0=h.horizon, x1=h.horizon, y0=0, y1=1, yref="paper", line={"color": "red"}
        )
        fig.add_annotation(x=h.horizon, y=1.02, yref="paper", text=label, showarrow=False)
    state = "valid" if h.valid else "INVALID: a control is above chance"
    fig.update_layout(
        title=f"{h.agent}: accuracy by month ({state})",
        xaxis_title="month of the fact", xaxis_type="category",
        yaxis_title="accuracy", yaxis_range=[0, 1.05],
        template="plotly_white", height=420,
    )  # fmt: skip
    return fig


def kaleido_available() -> bool:
    """True when plotly can write PNG (kaleido installed)."""
    return importlib.util.find_spec("kaleido") is not None


def write_plot(h: Horizon, stem: Path) -> list[Path]:
    """Write `stem.html` (self-contained) and `stem.png` when kaleido is present."""
    fig = horizon_figure(h)
    html = stem.with_suffix(".html")
    fig.write_html(html, include_plotlyjs=True, full_html=True, div_id=f"horizon-{h.agent}")
    written = [html]
    if kaleido_available():
        png = stem.with_suffix(".png")
        fig.write_image(png)
        written.append(png)
    return written
