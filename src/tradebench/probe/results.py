"""Scored result rows, the per-attacker summary with Wilson intervals, and their files.

A results folder holds `results-<attacker>.parquet` (one row per probe x variant x
attacker), `run-<attacker>.json` (how the attacker was run, failure counts) and
`summary.parquet` (one row per attacker x level x price mode x metric).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.errors import ConfigError, DataError
from tradebench.files import write_parquet_atomic, write_text_atomic
from tradebench.metrics.stats import wilson_interval
from tradebench.probe.attempt import Attempt
from tradebench.probe.scoring import Baselines, ProbeScore, random_baselines, score_guess
from tradebench.probe.store import ProbeSet

SUMMARY_FILE = "summary.parquet"
METRICS: tuple[tuple[str, str, str], ...] = (
    ("top1", "top1", "base_top1"),
    ("top5", "top5", "base_top5"),
    ("date ±7d", "date_ok", "base_date"),
    ("joint", "joint", "base_joint"),
    ("sector", "sector_ok", "base_sector"),
    ("board", "board_ok", "base_board"),
)
"""(metric label, hit column, random-baseline column) of the summary."""
GROUP = ["attacker", "level", "price_mode"]
RESULT_COLUMNS = [
    "probe_id", "attacker", "level", "price_mode", "window", "stratum_board",
    "gold_symbol", "gold_date", "gold_sector", "gold_board", "valid", "failure",
    "guess_tickers", "guess_date", "guess_sector", "guess_board",
    "top1", "top5", "date_distance", "date_ok", "joint", "sector_ok", "board_ok",
    "base_top1", "base_top5", "base_date", "base_joint", "base_sector", "base_board",
    "unreadable", "rejected", "retries", "tokens_in", "tokens_out", "raw",
]  # fmt: skip
"""Columns of a results file."""
SUMMARY_COLUMNS = [
    *GROUP, "metric", "n_probes", "n_valid", "n_failed", "successes", "n",
    "rate", "low", "high", "random",
]  # fmt: skip
"""Columns of `summary.parquet`."""


def slug(label: str) -> str:
    """A file-name-safe form of an attacker label."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-") or "attacker"


def score_attempts(probe_set: ProbeSet, attempts: list[Attempt]) -> pd.DataFrame:
    """One scored row per attempt, with the probe's stratum, gold and random baselines."""
    header = probe_set.header
    probes = {p.probe_id: p for p in probe_set.probes}
    calendar = np.array(header.calendar, dtype="datetime64[D]")
    rows = []
    for a in attempts:
        probe = probes[a.probe_id]
        gold = probe.gold
        base = random_baselines(
            probe.universe_size,
            gold.date_pos,
            header.date_lo,
            header.date_hi,
            len(header.sectors),
            len(header.boards),
            gold.sector is not None,
        )
        score = None if a.guess is None else score_guess(a.guess, gold, calendar, header.market)
        rows.append(_row(a, probe.window, probe.stratum_board, gold.model_dump(), score, base))
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _row(
    a: Attempt,
    window: int,
    board: str,
    gold: dict[str, Any],
    score: ProbeScore | None,
    base: Baselines,
) -> dict[str, Any]:
    g = a.guess
    hits = (
        {
            k: None
            for k in ("top1", "top5", "date_distance", "date_ok", "joint", "sector_ok", "board_ok")
        }
        if score is None
        else score.model_dump()
    )
    return {
        "probe_id": a.probe_id,
        "attacker": a.attacker,
        "level": a.level,
        "price_mode": a.price_mode,
        "window": window,
        "stratum_board": board,
        "gold_symbol": gold["symbol"],
        "gold_date": pd.Timestamp(gold["date"]),
        "gold_sector": gold["sector"],
        "gold_board": gold["board"],
        "valid": g is not None,
        "failure": a.failure,
        "guess_tickers": None if g is None else list(g.tickers),
        "guess_date": None if g is None else g.date,
        "guess_sector": None if g is None else g.sector,
        "guess_board": None if g is None else g.board,
        **hits,
        **{f"base_{k}": v for k, v in base.model_dump().items()},
        "unreadable": a.unreadable,
        "rejected": a.rejected,
        "retries": a.retries,
        "tokens_in": a.tokens_in,
        "tokens_out": a.tokens_out,
        "raw": a.raw,
    }


def summarise(results: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Rates with Wilson intervals and random baselines per attacker x level x price mode.

    Failures (no valid guess) are excluded from every rate and counted in `n_failed`;
    the sector metric counts only probes whose gold has a sector.
    """
    rows = []
    for key, group in results.groupby(GROUP, sort=True):
        valid = group[group["valid"].astype(bool)]
        for label, hit, base in METRICS:
            scored = valid[valid[hit].notna()]
            k, n = int(scored[hit].astype(bool).sum()), len(scored)
            ci = wilson_interval(k, n, confidence)
            rows.append({
                **dict(zip(GROUP, key, strict=True)),
                "metric": label,
                "n_probes": len(group),
                "n_valid": len(valid),
                "n_failed": len(group) - len(valid),
                "successes": k,
                "n": n,
                "rate": ci.estimate,
                "low": ci.low,
                "high": ci.high,
                "random": float(scored[base].astype(float).mean()) if n else float("nan"),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def write_results(out_dir: Path, label: str, rows: pd.DataFrame, meta: dict[str, Any]) -> Path:
    """Write `results-<label>.parquet` and `run-<label>.json`; refresh the summary."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"results-{slug(label)}.parquet"
    write_parquet_atomic(rows, path, index=False)
    meta_text = json.dumps(meta, indent=2, default=str) + "\n"
    write_text_atomic(out_dir / f"run-{slug(label)}.json", meta_text)
    write_parquet_atomic(summarise(load_results(out_dir)), out_dir / SUMMARY_FILE, index=False)
    return path


def load_results(out_dir: Path) -> pd.DataFrame:
    """Every `results-*.parquet` of a folder, concatenated.

    Raises:
        ConfigError: The folder has no results file.
        DataError: A results file lacks columns.
    """
    files = sorted(Path(out_dir).glob("results-*.parquet"))
    if not files:
        raise ConfigError(f"{out_dir} holds no results-*.parquet; run `tradebench probe run` first")
    frames = [pd.read_parquet(f) for f in files]
    for f, frame in zip(files, frames, strict=True):
        missing = [c for c in RESULT_COLUMNS if c not in frame.columns]
        if missing:
            raise DataError(f"{f} lacks columns {missing}; rerun `tradebench probe run`")
    return pd.concat(frames, ignore_index=True)


def load_run_meta(out_dir: Path) -> list[dict[str, Any]]:
    """The `run-*.json` records of a folder."""
    return [json.loads(p.read_text()) for p in sorted(Path(out_dir).glob("run-*.json"))]
