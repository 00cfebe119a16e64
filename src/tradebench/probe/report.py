"""The probe's standalone HTML page: recovery table and chart, breakdowns, definitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from tradebench.files import write_parquet_atomic, write_text_atomic
from tradebench.probe.results import GROUP, SUMMARY_FILE, load_results, load_run_meta, summarise
from tradebench.report.html import Section, note, render_page, table
from tradebench.report.probe_section import probe_section

REPORT_FILE = "report.html"
DEFINITIONS = (
    "top1 / top5: the gold ticker is the first / among the five tickers guessed. "
    "date ±7d: the guessed date is within 7 trading days of the last visible bar (day_-1); "
    "a non-trading day counts as the next trading day. joint: top5 and date ±7d. "
    "sector: exact match, only where the dataset has sectors. board: exact match (the "
    "snapshot shows the board, so this checks that attackers read it). Random baselines: "
    "1/N and 5/N over the universe on the decision day, the share of the gold-date range "
    "within ±7 trading days, 1/K sectors, 1/B boards, and top5 × date for joint."
)


def failure_table(results: pd.DataFrame) -> pd.DataFrame:
    """Attempts, valid guesses, failures and validation counts per attacker group."""
    grouped = results.groupby(GROUP, sort=True)
    out = grouped.agg(
        attempts=("probe_id", "size"),
        valid=("valid", "sum"),
        unreadable_replies=("unreadable", "sum"),
        rejected_submissions=("rejected", "sum"),
        retries=("retries", "sum"),
        tokens_in=("tokens_in", "sum"),
        tokens_out=("tokens_out", "sum"),
    ).reset_index()
    out.insert(5, "failed", out["attempts"] - out["valid"])
    return out


def by_board(results: pd.DataFrame) -> pd.DataFrame:
    """Top-5 and joint rates per stratum board (valid guesses only)."""
    valid = results[results["valid"].astype(bool)]
    rows = (
        valid.groupby([*GROUP, "stratum_board"], sort=True)
        .agg(n=("probe_id", "size"), top5=("top5", "mean"), joint=("joint", "mean"))
        .reset_index()
    )
    return rows


def _overview(meta: list[dict[str, Any]], results: pd.DataFrame) -> Section:
    runs = pd.DataFrame(
        [
            {
                "attacker": m.get("attacker"),
                "dataset": m.get("dataset_name"),
                "probes": m.get("n_probes"),
                "attempts": m.get("attempts"),
                "valid": m.get("valid"),
                "failed": m.get("failed"),
            }
            for m in meta
        ]
    )
    short = [s for m in meta[:1] for s in m.get("short_strata", [])]
    parts = [table(runs)] if not runs.empty else []
    parts.append(
        note(
            "Every stratum met its quota."
            if not short
            else "Short strata (filled deterministically from the others): "
            + "; ".join(
                f"window {s['window']} {s['board']}: {s['drawn']}/{s['quota']}" for s in short
            )
        )
    )
    parts.append(note(f"{results['probe_id'].nunique()} distinct probes in the results."))
    return Section("Probe runs", "".join(parts))


def build_probe_report(results_dir: Path, out: Path | None = None) -> Path:
    """Write the summary (`summary.parquet`) and the page (`report.html`); return its path.

    Raises:
        ConfigError: The folder holds no results.
    """
    results_dir = Path(results_dir)
    results = load_results(results_dir)
    summary = summarise(results)
    write_parquet_atomic(summary, results_dir / SUMMARY_FILE, index=False)
    sections = [
        _overview(load_run_meta(results_dir), results),
        probe_section(summary, failure_table(results), title="Recovery"),
        Section("By board (valid guesses)", table(by_board(results), digits=3)),
        Section("Definitions", note(DEFINITIONS)),
    ]
    path = Path(out) if out is not None else results_dir / REPORT_FILE
    write_text_atomic(
        path, render_page("De-anonymisation probe", sections, f"results: {results_dir.resolve()}")
    )
    return path
