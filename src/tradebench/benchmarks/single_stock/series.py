"""The stored per-step series of an episode, and re-scoring from it alone.

`steps.parquet` keeps every raw quantity: real dates, the prices each step settles on,
the action as sent and as executed, validity, positions, earned log returns, the wealth
path, and the guard counters. `rescore_series` recomputes positions, returns and scores
from the prices, executed actions and validity flags only, so stored scores can be
checked (or recomputed under another annualisation) without the dataset or the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tradebench.benchmarks.single_stock.ledger import Ledger, settle
from tradebench.benchmarks.single_stock.personas import stance_path
from tradebench.benchmarks.single_stock.scoring import SingleStockScores, score_episode
from tradebench.errors import DataError
from tradebench.metrics import FAULT_COLUMNS, FAULT_COUNT_COLUMNS, TRADING_DAYS_PER_YEAR

if TYPE_CHECKING:
    from tradebench.benchmarks.single_stock.agents import StepDecision
    from tradebench.benchmarks.single_stock.episode import EpisodePlan

SERIES_COLUMNS = (
    "step",
    "date",
    "settle_date",
    "symbol",
    "persona",
    "stance",
    "price",
    "next_price",
    "sent",
    "action",
    "valid",
    "reason",
    "confidence",
    "position",
    "asset_log_return",
    "earned",
    "nav",
    "benchmark_close",
    "attempts",
    "nudges",
    "parse_failures",
    "empty_replies",
    "tokens_in",
    "tokens_out",
    *FAULT_COLUMNS,
)
"""Columns of `steps.parquet` (`nav` = wealth after the step settles; `benchmark_close` =
the asset's close on the settle day, the buy-and-hold reference; the endpoint-fault
columns of `metrics.reliability.FAULT_COLUMNS` last, null for rule agents)."""
COUNTERS = ("attempts", "nudges", "parse_failures", "empty_replies")
TOKENS = ("tokens_in", "tokens_out")
GUARDS = COUNTERS + TOKENS


def build_series(
    plan: EpisodePlan, decisions: Sequence[StepDecision], ledger: Ledger
) -> pd.DataFrame:
    """The series of the first `len(decisions)` steps of `plan`."""
    k = len(decisions)
    before = [0.0, *(ledger.wealth[:-1] - 1.0)] if k else []
    frame = pd.DataFrame(
        {
            "step": np.arange(k, dtype=np.int64),
            "date": pd.to_datetime(plan.days[:k]),
            "settle_date": pd.to_datetime(plan.settle_days[:k]),
            "symbol": [plan.task.symbol] * k,
            "persona": [plan.task.persona] * k,
            "stance": stance_path(plan.task.persona, list(before)),
            "price": plan.prices[:k],
            "next_price": plan.next_prices[:k],
            "sent": [d.sent for d in decisions],
            "action": [d.action for d in decisions],
            "valid": np.array([d.valid for d in decisions], dtype=bool),
            "reason": [d.reason for d in decisions],
            "confidence": pd.array([d.confidence for d in decisions], dtype="Float64"),
            "position": ledger.positions,
            "asset_log_return": ledger.asset_log_returns,
            "earned": ledger.earned,
            "nav": ledger.wealth,
            "benchmark_close": plan.next_prices[:k],
        }
    )
    for name in COUNTERS:
        frame[name] = np.array([getattr(d, name) for d in decisions], dtype=np.int64)
    for name in TOKENS:  # NaN for rule agents, as in the portfolio step tables
        values = [getattr(d, name) for d in decisions]
        frame[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    for name in FAULT_COLUMNS:  # null for rule agents; counts as integers, else seconds
        kind = "Int64" if name in FAULT_COUNT_COLUMNS else "Float64"
        frame[name] = pd.array([getattr(d, name) for d in decisions], dtype=kind)
    return frame[list(SERIES_COLUMNS)]


def rescore_series(
    series: pd.DataFrame, periods_per_year: float = TRADING_DAYS_PER_YEAR
) -> SingleStockScores:
    """Scores recomputed from a stored series' prices, executed actions and validity.

    Raises:
        DataError: A needed column is missing or the series is empty.
    """
    missing = [c for c in ("price", "next_price", "action", "valid") if c not in series]
    if missing:
        raise DataError(f"series lacks {missing}; it was not written by this benchmark")
    ordered = series.sort_values("step") if "step" in series else series
    ledger = settle(
        list(ordered["action"]),
        ordered["price"].to_numpy(dtype=float),
        ordered["next_price"].to_numpy(dtype=float),
    )
    return score_episode(
        ledger.earned,
        ledger.asset_log_returns,
        ordered["valid"].to_numpy(dtype=bool),
        periods_per_year,
    )


def series_records(series: pd.DataFrame) -> list[dict[str, Any]]:
    """The series as JSON-able records: ISO dates, exact floats (repr), NaN as None."""
    out = []
    for row in series.to_dict("records"):
        record = {}
        for key, value in row.items():
            if isinstance(value, pd.Timestamp):
                value = value.date().isoformat()
            elif value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
                value = None
            elif isinstance(value, np.generic):
                value = value.item()
            record[key] = value
        out.append(record)
    return out


def guard_totals(series: pd.DataFrame) -> dict[str, Any]:
    """Per-episode totals of the guard counters plus valid/invalid step counts."""
    out: dict[str, Any] = {
        "steps": len(series),
        "valid": int(series["valid"].sum()),
        "invalid": int((~series["valid"].astype(bool)).sum()),
    }
    for name in GUARDS:
        values = pd.to_numeric(series[name], errors="coerce")
        out[name] = None if values.isna().all() else int(values.sum())
    return out
