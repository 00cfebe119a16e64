"""HTML helpers: escaping, number formatting, section anchors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tradebench.report.html import MISSING, Section, esc, fmt, mean_std, table


def test_table_escapes_headers_and_cells() -> None:
    frame = pd.DataFrame({"<b>col": ['"><img src=x onerror=alert(1)>', "a & b"]})
    html = table(frame, row_classes=['x" onmouseover="y', ""])
    assert "<img" not in html and "<b>col" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&quot;&gt;" in html and "a &amp; b" in html
    assert 'class="x&quot; onmouseover=&quot;y"' in html


def test_fmt_and_mean_std() -> None:
    assert fmt(float("nan")) == MISSING and fmt(None) == MISSING and fmt(pd.NA) == MISSING
    assert fmt(np.float64(0.123456)) == "0.1235"
    assert fmt(np.int64(12345)) == "12,345"
    assert fmt(pd.Timestamp("2021-03-01")) == "2021-03-01"
    assert mean_std(0.1, math.nan) == "0.1000"
    assert mean_std(0.1, 0.02) == "0.1000 ± 0.0200"
    assert mean_std(math.nan, 0.02) == MISSING


def test_numbers_right_aligned_missing_not() -> None:
    html = table(pd.DataFrame({"x": [1.5, math.nan]}))
    assert '<td class="num">1.5000</td>' in html
    assert f"<td>{MISSING}</td>" in html


def test_section_anchor_and_esc() -> None:
    assert Section("Mode × mask matrix", "").anchor == "mode-mask-matrix"
    assert esc("'") == "&#x27;"
