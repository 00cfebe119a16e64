"""The memory gap of a run as a report section: for every model agent, mode and window run
under the `bright` mask and a blinded level, bright minus the level in total return, paired
on the same seeds and days (`tradebench.inference.compare_rows`: the paired t-test over
seeds where seeds differ, else the block bootstrap of the difference over days), with
Holm's adjustment over the section's comparisons. The leaderboard shows the same gap with
Holm over its whole board."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tradebench.inference import InferenceSettings, compare_rows
from tradebench.inference.pairs import GAP_LEVELS
from tradebench.metrics.stats import holm_adjust
from tradebench.report.html import MISSING, Section, fmt, note, table
from tradebench.report.load import RunData
from tradebench.report.tables import window_label

METRIC = "total_return"

__all__ = ["gap_table", "memory_gap_section"]


def _episodes(run: RunData, rows: pd.DataFrame) -> pd.DataFrame:
    """Model episodes as `inference` wants them: seed, steps, value, daily returns."""
    returns = []
    for episode_id in rows["episode_id"]:
        nav = run.steps.get(episode_id, pd.DataFrame()).get("nav")
        start = run.initial_cash.get(episode_id)
        if nav is None or start is None or len(nav) == 0:
            returns.append(None)
            continue
        path = np.concatenate([[start], pd.to_numeric(nav).to_numpy(dtype=float)])
        returns.append(path[1:] / path[:-1] - 1 if np.isfinite(path).all() else None)
    return pd.DataFrame(
        {
            "seed": rows["seed"].to_numpy(),
            "n_steps": rows["n_steps"].astype(int).to_numpy(),
            "value": pd.to_numeric(rows[METRIC], errors="coerce").to_numpy(dtype=float),
            "index_value": np.nan,
            "returns": returns,
            "index_returns": [None] * len(rows),
        }
    )


def gap_table(run: RunData, settings: InferenceSettings | None = None) -> pd.DataFrame:
    """One row per agent, mode, window and blinded level: bright minus the level."""
    settings = settings or InferenceSettings()
    done = run.done()
    models = done[done["kind"] == "llm"]
    records = []
    keys = ["agent", "mode", "window_start", "window_end"]
    for key, group in models.groupby(keys, sort=True, dropna=False):
        bright = group[group["mask"] == "bright"]
        if bright.empty:
            continue
        for level in GAP_LEVELS:
            other = group[group["mask"] == level]
            if other.empty:
                continue
            result = compare_rows(_episodes(run, bright), _episodes(run, other), METRIC, settings)
            records.append({**dict(zip(keys, key, strict=True)), "level": level, **result})
    table_ = pd.DataFrame(records)
    if not table_.empty:
        table_["p_holm"] = holm_adjust(table_["p"].to_numpy(dtype=float))
    return table_


def _interval(d: float, lo: float, hi: float) -> str:
    if pd.isna(d):
        return MISSING
    return fmt(d) if pd.isna(lo) else f"{fmt(d)} [{fmt(lo)}, {fmt(hi)}]"


def memory_gap_section(run: RunData, options: object) -> Section | None:
    """The section; None when no model ran under `bright` and a blinded level."""
    gaps = gap_table(run)
    if gaps.empty:
        return None
    shown = pd.DataFrame(
        {
            "agent": gaps["agent"],
            "mode": gaps["mode"],
            "window": [window_label(s, e) for s, e in gaps[["window_start", "window_end"]].values],
            "bright minus": gaps["level"],
            "seeds paired": gaps["pairs"],
            "gap [95% interval] (uncertainty)": [
                f"{_interval(d, lo, hi)} ({src})" if src != "none" else _interval(d, lo, hi)
                for d, lo, hi, src in gaps[["difference", "low", "high", "source"]].values
            ],
            "p": gaps["p"],
            "Holm p": gaps["p_holm"],
            "over days [95% interval]": [
                _interval(d, lo, hi)
                for d, lo, hi in gaps[["days_difference", "days_low", "days_high"]].values
            ],
        }
    )
    text = (
        "The memory gap in total return: the model with real names and dates (bright) minus "
        "the same model, mode, window and seeds under a mask (blinded: both hidden; "
        "stock_blind, date_blind: one hidden). A positive gap is return the model makes only "
        "when it can recognise what it trades. Uncertainty: seeds (paired t over the seeds, "
        "where the seeds' gaps differ) or days (the stationary block bootstrap of the paired "
        "daily returns); Holm's adjustment over the gaps in this table. docs/statistics.md."
    )
    return Section("Memory gap", note(text) + table(shown))
