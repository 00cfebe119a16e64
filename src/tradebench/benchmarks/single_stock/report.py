"""Report sections of the single-stock persona benchmark: one section per persona.

Each section reads the run folder only (`episode.json`, `metrics.json`, `steps.parquet`
of every single-stock episode) and shows, per agent, mask and symbol, the composite and
its components (mean ± std over seeds and windows), the raw metrics next to buy-and-hold
over the same days, the guard counters, and a bar chart of the mean composite. A run
without single-stock episodes gets no such section.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from tradebench.report.html import Section, figure_html, mean_std, note, table
from tradebench.report.load import RunData
from tradebench.runs.records import EPISODES_DIR, METRICS_FILE, STEPS_FILE
from tradebench.runs.store import read_episode_record, read_json, read_parquet

if TYPE_CHECKING:
    from tradebench.report.sections import ReportOptions

PERSONAS = ("risk_seeking", "risk_averse", "adaptive")
GROUP = ["agent", "kind", "mask", "symbol"]
SCORES = (
    "composite",
    "cum_return_component",
    "sharpe_component",
    "stability",
    "discipline",
    "cum_return",
    "buy_and_hold_return",
    "sharpe",
    "volatility",
    "max_drawdown",
    "risk_averse_share",
)
COUNTS = ("steps", "invalid", "nudges", "parse_failures", "empty_replies")

__all__ = ["SINGLE_STOCK_SECTIONS", "persona_section", "single_stock_rows"]


def _row(folder: Path) -> dict | None:
    """One finished single-stock episode as a flat row; None for anything else."""
    record = read_episode_record(folder)
    metrics = read_json(folder / METRICS_FILE)
    if record is None or record.benchmark != "single_stock" or record.status != "done":
        return None
    if not metrics:
        return None
    meta = {**record.extras, "agent": record.agent, "kind": record.kind, "mask": record.mask}
    scores, guards = metrics["scores"], metrics.get("guards") or {}
    strategy, components = scores["strategy"], scores["components"]
    steps = folder / STEPS_FILE
    stance = read_parquet(steps, columns=["stance"])["stance"] if steps.exists() else None
    return {
        "episode_id": folder.name,
        "agent": meta.get("agent"),
        "kind": meta.get("kind"),
        "persona": meta.get("persona"),
        "mask": meta.get("mask"),
        "symbol": meta.get("symbol"),
        "composite": scores["composite"],
        "cum_return_component": components["cum_return"],
        "sharpe_component": components["sharpe"],
        "stability": components["stability"],
        "discipline": components["discipline"],
        "cum_return": strategy["cum_return"],
        "buy_and_hold_return": scores["buy_and_hold"]["cum_return"],
        "sharpe": strategy["sharpe"],
        "volatility": strategy["volatility"],
        "max_drawdown": strategy["max_drawdown"],
        "risk_averse_share": None if stance is None else float((stance == "risk_averse").mean()),
        **{c: guards.get(c) for c in COUNTS},
    }


def single_stock_rows(run: RunData) -> pd.DataFrame:
    """Every finished single-stock episode of the run as one row (empty when none)."""
    root = run.run_dir / EPISODES_DIR
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    rows = [r for r in (_row(f) for f in folders) if r is not None]
    frame = pd.DataFrame(rows)
    for col in (*SCORES, *COUNTS):
        if col in frame:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    return frame


def persona_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std of every score per (agent, kind, mask, symbol), guard counts summed."""
    grouped = rows.groupby(GROUP, sort=True, dropna=False)
    out = grouped.size().rename("n").reset_index()
    means, stds = grouped[list(SCORES)].mean(), grouped[list(SCORES)].std(ddof=1)
    for col in SCORES:
        pairs = zip(means[col].to_numpy(), stds[col].to_numpy(), strict=True)
        out[col] = [mean_std(m, s) for m, s in pairs]
    sums = grouped[list(COUNTS)].sum(min_count=1).round().astype("Int64").reset_index(drop=True)
    return pd.concat([out, sums], axis=1).sort_values(["symbol", "agent", "mask"], kind="stable")


def composite_figure(rows: pd.DataFrame, persona: str) -> go.Figure:
    """Mean composite per agent and mask (bars), one bar group per symbol."""
    fig = go.Figure()
    labels = rows["agent"].astype(str) + " · " + rows["mask"].astype(str)
    means = rows.assign(label=labels).groupby(["label", "symbol"], sort=True)["composite"].mean()
    for label, part in means.reset_index().groupby("label", sort=True):
        fig.add_trace(go.Bar(x=part["symbol"], y=part["composite"], name=str(label)))
    fig.update_layout(
        title=f"Mean composite · {persona}",
        barmode="group",
        yaxis={"title": "composite", "range": [0, 1]},
        template="plotly_white",
        height=380,
    )
    return fig


def persona_section(persona: str) -> Callable[[RunData, ReportOptions], Section | None]:
    """The section builder of one persona (it returns None when the run has none)."""

    def build(run: RunData, options: ReportOptions) -> Section | None:
        rows = single_stock_rows(run)
        if rows.empty or persona not in set(rows["persona"]):
            return None
        rows = rows[rows["persona"] == persona]
        intro = note(
            "Finished episodes; mean ± sample std over seeds and windows. composite = mean of "
            "cum_return_component = clip(0.5 + CR/2, 0, 1), sharpe_component = "
            "clip((Sharpe + 1)/3, 0, 1), stability = 1 - clip(MDD, 0, 1) and discipline = "
            "valid decisions / steps. CR = exp(sum of earned log returns) - 1; "
            "buy_and_hold_return is holding +1 over the same days. Guard counts are sums."
        )
        body = intro + table(persona_table(rows)) + figure_html(composite_figure(rows, persona))
        return Section(f"Single-stock persona · {persona}", body)

    build.__name__ = f"single_stock_{persona}_section"
    build.__doc__ = f"Single-stock results of the `{persona}` persona."
    return build


SINGLE_STOCK_SECTIONS = tuple(persona_section(p) for p in PERSONAS)
"""One builder per persona, in protocol order."""
