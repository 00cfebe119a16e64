"""Write and read a single-stock episode folder; re-score it from the stored series.

Files: `steps.parquet` (the per-step series), `metrics.json` (scores, guard totals and
the summary's flat panel fields), `episode.json` (metadata, status), `trace.jsonl` and
`progress.jsonl` (per step, see `checkpoint.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.benchmarks.single_stock.scoring import SingleStockScores
from tradebench.benchmarks.single_stock.series import guard_totals, rescore_series
from tradebench.errors import DataError
from tradebench.files import write_parquet_atomic
from tradebench.metrics import FAULT_COLUMNS, FAULT_COUNT_COLUMNS, TRADING_DAYS_PER_YEAR, step_total
from tradebench.runs.records import METRICS_FILE, STEPS_FILE, EpisodeRecord
from tradebench.runs.store import read_json, read_parquet, write_json

SERIES_FILE = STEPS_FILE
"""The per-step series is the episode's step table."""


def fault_totals(series: pd.DataFrame) -> dict[str, Any]:
    """The episode's endpoint-fault totals (`FAULT_COLUMNS`), as the portfolio panel keeps
    them: counts as ints, seconds as floats, None for rule agents."""
    out: dict[str, Any] = {}
    for name in FAULT_COLUMNS:
        values = series[name] if name in series else pd.Series([], dtype=float)
        total = step_total(pd.to_numeric(values, errors="coerce").astype(float), name)
        count = name in FAULT_COUNT_COLUMNS
        out[name] = None if np.isnan(total) else int(total) if count else total
    return out


def metrics_payload(scores: SingleStockScores, series: pd.DataFrame) -> dict[str, Any]:
    """`metrics.json`: full scores, guard totals, and the report summary's flat fields
    (return, Sharpe, drawdown, buy-and-hold as the benchmark, endpoint-fault totals)."""
    s, bh = scores.strategy, scores.buy_and_hold
    return {
        "benchmark_kind": "single_stock",
        "scores": scores.model_dump(mode="python"),
        "guards": guard_totals(series),
        "composite": scores.composite,
        "total_return": s.cum_return,
        "sharpe": s.sharpe,
        "max_drawdown": s.max_drawdown,
        "benchmark": {
            "total_return": bh.cum_return,
            "sharpe": bh.sharpe,
            "max_drawdown": bh.max_drawdown,
        },
        **fault_totals(series),
    }


SCORE_COLUMNS = (
    "composite",
    "cum_return_component",
    "sharpe_component",
    "stability",
    "discipline",
    "cum_return",
    "log_return",
    "volatility",
    "buy_and_hold_return",
    "buy_and_hold_sharpe",
    "buy_and_hold_volatility",
    "buy_and_hold_max_drawdown",
    "valid_steps",
    "invalid_steps",
    "nudges",
    "parse_failures",
    "empty_replies",
)
"""The single-stock columns `summary.parquet` carries beside the common ones."""
SINGLE_STOCK_COLUMNS = ("cell", "symbol", "persona", "price_mode", *SCORE_COLUMNS)
"""What `single_stock_columns` returns, in order."""


def single_stock_columns(record: EpisodeRecord, folder: Path) -> dict[str, Any]:
    """The task (cell, symbol, persona), the price mode it ran under and every score of a
    finished episode as flat summary columns; scores are null while it runs."""
    extras = record.extras
    out: dict[str, Any] = {
        "cell": extras.get("cell"),
        "symbol": extras.get("symbol"),
        "persona": extras.get("persona"),
        "price_mode": extras.get("price_mode"),
        **dict.fromkeys(SCORE_COLUMNS, np.nan),
    }
    metrics = read_json(Path(folder) / METRICS_FILE)
    if "scores" not in metrics:
        return out
    scores = SingleStockScores.model_validate(metrics["scores"])
    guards = metrics.get("guards") or {}
    s, bh, c = scores.strategy, scores.buy_and_hold, scores.components
    values = {
        "composite": scores.composite,
        "cum_return_component": c.cum_return,
        "sharpe_component": c.sharpe,
        "stability": c.stability,
        "discipline": c.discipline,
        "cum_return": s.cum_return,
        "log_return": s.log_return,
        "volatility": s.volatility,
        "buy_and_hold_return": bh.cum_return,
        "buy_and_hold_sharpe": bh.sharpe,
        "buy_and_hold_volatility": bh.volatility,
        "buy_and_hold_max_drawdown": bh.max_drawdown,
        "valid_steps": guards.get("valid"),
        "invalid_steps": guards.get("invalid"),
        "nudges": guards.get("nudges"),
        "parse_failures": guards.get("parse_failures"),
        "empty_replies": guards.get("empty_replies"),
    }
    out |= {k: np.nan if v is None else float(v) for k, v in values.items()}
    return out


def write_episode(folder: Path, series: pd.DataFrame, scores: SingleStockScores) -> None:
    """Write the series and the metrics of a finished episode."""
    folder.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(series, folder / SERIES_FILE, index=False)
    write_json(folder / METRICS_FILE, metrics_payload(scores, series))


def read_series(folder: Path) -> pd.DataFrame:
    """The stored per-step series of an episode folder.

    Raises:
        DataError: The folder holds no series.
    """
    path = Path(folder) / SERIES_FILE
    if not path.exists():
        raise DataError(f"{path} does not exist; is {folder} a finished single-stock episode?")
    return read_parquet(path)


def rescore_folder(
    folder: Path, periods_per_year: float = TRADING_DAYS_PER_YEAR
) -> SingleStockScores:
    """Scores recomputed from an episode folder's stored series alone."""
    return rescore_series(read_series(folder), periods_per_year)
