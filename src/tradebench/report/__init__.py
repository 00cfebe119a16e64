"""Self-contained HTML reports of a run folder.

`build_report(run_dir)` reads `spec.yaml`, `summary.parquet` (or the episode folders) and
each episode's steps, orders and masked trace, and writes `run_dir/report.html`: plotly.js
embedded once, every data string escaped, tables readable without JavaScript, and nothing
that varies between builds (seeded plot ids, no clock, the folder's name rather than its
path), so a replayed run reproduces the page byte for byte. Sections are functions
`(RunData, ReportOptions) -> Section | None`; see `docs/report.md`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tradebench.files import write_text_atomic
from tradebench.report.html import Section, render_page
from tradebench.report.load import RunData, load_run
from tradebench.report.sections import (
    DEFAULT_SECTIONS,
    ReportOptions,
    SectionBuilder,
    sections_for,
)
from tradebench.runs.records import REPORT_FILE
from tradebench.runs.summary import (
    SUMMARY_COLUMNS,
    benchmark_columns,
    summarise_episodes,
    write_summary,
)

__all__ = [
    "DEFAULT_SECTIONS",
    "REPORT_FILE",
    "SUMMARY_COLUMNS",
    "ReportOptions",
    "RunData",
    "Section",
    "SectionBuilder",
    "build_benchmark_report",
    "build_report",
    "load_run",
    "render_report",
    "sections_for",
    "summarise_episodes",
    "write_summary",
]


def render_report(
    run: RunData,
    options: ReportOptions | None = None,
    sections: Sequence[SectionBuilder] = DEFAULT_SECTIONS,
) -> str:
    """The report page of a loaded run as HTML text."""
    options = options or ReportOptions()
    built = [s for s in (builder(run, options) for builder in sections) if s is not None]
    subtitle = f"tradebench report of run folder {run.folder_name}"
    return render_page(run.name, built, subtitle)


def build_report(
    run_dir: Path,
    options: ReportOptions | None = None,
    sections: Sequence[SectionBuilder] = DEFAULT_SECTIONS,
    columns: Sequence[str] = SUMMARY_COLUMNS,
) -> Path:
    """Write `run_dir/report.html` and return its path; `columns`: the summary columns of
    the run's benchmark (by default a broker benchmark's).

    Raises:
        ConfigError: `run_dir` does not exist or holds no episodes.
        DataError: a run file is unreadable.
    """
    run = load_run(Path(run_dir), columns)
    out = run.run_dir / REPORT_FILE
    write_text_atomic(out, render_report(run, options, sections))
    return out


def build_benchmark_report(
    run_dir: Path, benchmark: Any, options: ReportOptions | None = None
) -> Path:
    """Write `run_dir/report.html` for a run of `benchmark`: its summary columns, the common
    sections, the broker ones when it has `broker_files`, then its own sections."""
    run = load_run(Path(run_dir), benchmark_columns(benchmark), benchmark.summary_row)
    out = run.run_dir / REPORT_FILE
    write_text_atomic(out, render_report(run, options, sections_for(benchmark)))
    return out
