"""HTML assembly: the section interface, escaped tables, figure fragments, the page.

Every string that comes from data (agent names, model-written reasons, spec values) goes
through `esc` (`html.escape`) on its way into the page; a `Section.body` is trusted
HTML built only with these helpers. plotly.js is embedded once, inline, in the page head.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

MISSING = "–"
"""How an undefined value is shown."""

__all__ = [
    "Section",
    "esc",
    "figure_html",
    "figure_id",
    "fmt",
    "mean_std",
    "note",
    "render_page",
    "slug",
    "table",
]


@dataclass(frozen=True)
class Section:
    """One block of the report: a title and a trusted HTML fragment.

    New report sections (attribution, MCQ, personas, probe) are functions
    `(RunData, ReportOptions) -> Section | None` added to the builder list.
    """

    title: str
    """Heading, plain text (escaped when rendered)."""
    body: str
    """HTML fragment; any data inside must already be escaped."""

    @property
    def anchor(self) -> str:
        """Fragment id derived from the title."""
        return slug(self.title) or "section"


def esc(value: Any) -> str:
    """Text escaped for HTML content and attribute values."""
    return html.escape(str(value), quote=True)


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and not math.isfinite(value)


def fmt(value: Any, digits: int = 4) -> str:
    """A value as display text: floats to `digits` places, dates as YYYY-MM-DD."""
    if _is_missing(value):
        return MISSING
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        return f"{float(value):,.{digits}f}"
    if isinstance(value, pd.Timestamp):
        return value.date().isoformat() if value == value.normalize() else value.isoformat()
    return str(value)


def mean_std(mean: Any, std: Any, digits: int = 4) -> str:
    """`mean ± std`, or just the mean when std is undefined (one seed)."""
    if _is_missing(mean):
        return MISSING
    if _is_missing(std):
        return fmt(mean, digits)
    return f"{fmt(mean, digits)} ± {fmt(std, digits)}"


def note(text: str) -> str:
    """A short escaped paragraph."""
    return f'<p class="note">{esc(text)}</p>'


def _cell(value: Any, digits: int, cls: str | None) -> str:
    """One escaped `<td>`; numbers get class `num` unless `cls` says otherwise."""
    number = isinstance(value, int | float | np.integer | np.floating)
    number = number and not isinstance(value, bool | np.bool_) and not _is_missing(value)
    cls = cls or ("num" if number else "")
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<td{attr}>{esc(fmt(value, digits))}</td>"


def table(
    frame: pd.DataFrame,
    *,
    digits: int = 4,
    classes: Mapping[str, str] | None = None,
    row_classes: Sequence[str] | None = None,
    index: bool = False,
) -> str:
    """An HTML table of `frame` with every header and cell escaped.

    Args:
        frame: The data; floats are shown with `digits` places.
        classes: CSS class per column (`num` right-aligns preformatted numbers).
        row_classes: One CSS class per row ("" for none).
        index: Show the index as the first column.
    """
    if index:
        frame = frame.reset_index()
    classes = classes or {}
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    rows = []
    for i, values in enumerate(frame.itertuples(index=False, name=None)):
        cls = row_classes[i] if row_classes is not None else ""
        attr = f' class="{esc(cls)}"' if cls else ""
        pairs = zip(frame.columns, values, strict=True)
        cells = "".join(_cell(v, digits, classes.get(str(c))) for c, v in pairs)
        rows.append(f"<tr{attr}>{cells}</tr>")
    return (
        f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def slug(text: str) -> str:
    """Lower-case letters, digits and dashes only (fragment ids)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def figure_id(fig: go.Figure, name: str = "") -> str:
    """A seeded div id: `fig-<name slug>-<digest of name and figure JSON>`.

    The same figure under the same name always gets the same id (plotly's own default is
    a random UUID), so two builds of one run are byte-identical; the digest keeps two
    figures apart whose names slug alike.
    """
    digest = hashlib.sha256(f"{name}\n{fig.to_json()}".encode()).hexdigest()[:12]
    return "-".join(p for p in ("fig", slug(name)[:40], digest) if p)


def figure_html(fig: go.Figure, name: str = "") -> str:
    """A figure as a `<div>` plus inline script; plotly.js itself is in the page head.

    The div id is `figure_id(fig, name)`: deterministic, never random. Give `name` (the
    section and figure, e.g. `"equity 2024-01-02 → 2024-03-29 memory_only"`) when a page
    may hold two identical figures.
    """
    return fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=figure_id(fig, name),
        config={"displaylogo": False, "responsive": True},
    )


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;
padding:1.5rem;color:#1d2433;line-height:1.45}
h1{margin-bottom:.2rem}h2{border-bottom:1px solid #d8dde6;padding-bottom:.3rem;margin-top:2.2rem}
nav ol{columns:2;font-size:.95rem}.note{color:#555;font-size:.92rem}
.table-wrap{overflow-x:auto;max-width:100%;margin:.6rem 0 1rem}
table{border-collapse:collapse;font-size:.86rem}
th,td{border:1px solid #d8dde6;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f4f8}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.benchmark td{background:#fff6d6;font-weight:600}tr.total td{font-weight:600}
pre{background:#f6f8fa;padding:.8rem;overflow-x:auto;font-size:.82rem}
td.reason{max-width:42rem;white-space:pre-wrap;overflow-wrap:anywhere}
details.episode{border:1px solid #d8dde6;border-radius:4px;padding:.3rem .8rem;margin:.5rem 0}
details.episode>summary{cursor:pointer;font-weight:600}
"""


def render_page(title: str, sections: Sequence[Section], subtitle: str = "") -> str:
    """The whole self-contained page: head with CSS and plotly.js, contents, sections."""
    toc = "".join(f'<li><a href="#{s.anchor}">{esc(s.title)}</a></li>' for s in sections)
    body = "".join(
        f'<section id="{s.anchor}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections
    )
    sub = f'<p class="note">{esc(subtitle)}</p>' if subtitle else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
        f"<h1>{esc(title)}</h1>{sub}"
        '<noscript><p class="note">Charts need JavaScript; every table reads without it.'
        f"</p></noscript><nav><ol>{toc}</ol></nav>{body}</body></html>\n"
    )
