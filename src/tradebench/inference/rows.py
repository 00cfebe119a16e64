"""One board row's statistics: the seed mean with its interval over seeds (Student t) and
over days (stationary block bootstrap), which one the row shows, and the probabilistic
and deflated Sharpe ratios of its daily returns.

A row's episodes are given as a table with `seed`, `n_steps`, `value` (the board's metric),
`returns` (the episode's daily returns, an array, or None) and `index_returns` (the
index's daily returns over the same days, or None). Episodes of the same seed (the same
configuration run in two run folders) are averaged into one outcome first, so a repeated
seed never counts twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tradebench.metrics.block_bootstrap import STATISTICS, block_interval
from tradebench.metrics.returns import TRADING_DAYS_PER_YEAR
from tradebench.metrics.sharpe_inference import deflated_sharpe, probabilistic_sharpe
from tradebench.metrics.stats import (
    PERCENTILE_MIN_N,
    Interval,
    bootstrap_mean_ci,
    t_interval,
)

ROW_STAT_COLUMNS = [
    "seeds",
    "mean",
    "low",
    "high",
    "interval",
    "seeds_low",
    "seeds_high",
    "days",
    "days_low",
    "days_high",
    "sharpe_daily",
    "psr",
]
"""What `row_statistics` returns: `interval` names the uncertainty `low`/`high` carry
(`seeds`, `days`, or `none`)."""
NO_INTERVAL = "none"

__all__ = [
    "ROW_STAT_COLUMNS",
    "InferenceSettings",
    "day_matrix",
    "deflate",
    "per_seed",
    "row_statistics",
    "seed_interval",
    "seed_key",
]


@dataclass(frozen=True)
class InferenceSettings:
    """Confidence and resampling of every interval and test on one board."""

    confidence: float = 0.95
    """Two-sided nominal coverage; tests are at level 1 - confidence."""
    seed_method: str = "t"
    """Interval over seeds: `t` (Student t), or `bootstrap` (the percentile bootstrap,
    used only from `PERCENTILE_MIN_N` seeds; Student t below)."""
    resamples: int = 2_000
    """Bootstrap resamples (block bootstrap over days, percentile bootstrap over seeds)."""
    seed: int = 0
    """Seed of every bootstrap (each afresh)."""
    periods_per_year: int = TRADING_DAYS_PER_YEAR
    """Annualisation of Sharpe and IR."""


def seed_interval(values: np.ndarray, settings: InferenceSettings) -> Interval:
    """The interval of a mean over seeds: Student t, or the percentile bootstrap where
    asked for and there are at least `PERCENTILE_MIN_N` values."""
    if settings.seed_method == "bootstrap" and len(values) >= PERCENTILE_MIN_N:
        return bootstrap_mean_ci(
            values,
            confidence=settings.confidence,
            n_resamples=settings.resamples,
            seed=settings.seed,
        )
    return t_interval(values, settings.confidence)


def seed_key(seeds: pd.Series) -> pd.Series:
    """Seeds as text keys, whole numbers without a decimal point whatever the column's
    dtype (a seed column beside the index's missing seed is float); "" for no seed."""
    numeric = pd.to_numeric(seeds, errors="coerce")
    whole = numeric.notna() & (numeric == numeric.round())
    text = seeds.astype("string")
    text[whole] = numeric[whole].astype("int64").astype("string")
    return text.fillna("")


def per_seed(episodes: pd.DataFrame) -> pd.DataFrame:
    """One outcome per seed (and step count): the mean `value` and element-wise mean
    daily returns of its episodes. A reference that ran once per window (no seed) keeps
    seed NaN."""
    rows = []
    key = seed_key(episodes["seed"])
    for (seed, steps), group in episodes.groupby([key, "n_steps"], sort=True):
        rows.append(
            {
                "seed": seed if seed != "" else None,
                "n_steps": int(steps),
                "value": float(group["value"].mean()),
                "returns": _mean_array(group["returns"]),
                "index_returns": _mean_array(group["index_returns"]),
            }
        )
    return pd.DataFrame(rows, columns=["seed", "n_steps", "value", "returns", "index_returns"])


def _mean_array(arrays: pd.Series) -> np.ndarray | None:
    """Element-wise mean of equal-length arrays; None when any is missing or lengths
    differ."""
    items = list(arrays)
    if not items or any(a is None for a in items) or len({len(a) for a in items}) != 1:
        return None
    return np.mean(np.vstack(items), axis=0)


def day_matrix(outcomes: pd.DataFrame, column: str = "returns") -> np.ndarray | None:
    """(days, seeds) matrix of the outcomes' daily returns, None unless every outcome has
    them over the same number of days."""
    arrays = list(outcomes[column])
    if not arrays or any(a is None for a in arrays) or len({len(a) for a in arrays}) != 1:
        return None
    return np.column_stack(arrays)


def _modal(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The outcomes of the most common step count (the longest on a tie)."""
    counts = outcomes["n_steps"].value_counts()
    best = max(counts.index, key=lambda s: (counts[s], s))
    return outcomes[outcomes["n_steps"] == best]


def row_statistics(
    episodes: pd.DataFrame, metric: str, settings: InferenceSettings
) -> dict[str, object]:
    """`ROW_STAT_COLUMNS` of one row's episodes for `metric` (see the module docstring).

    The interval shown: over seeds (Student t) where at least two seeds differ; else over
    days (the block bootstrap of the metric, averaged over the seeds of the row's most
    common length, all resampled on the same days) for total return, Sharpe and IR;
    else none (one value has no interval)."""
    outcomes = per_seed(episodes)
    values = outcomes["value"].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    nan = float("nan")
    seeds = seed_interval(values, settings) if len(values) else None
    varies = len(values) >= 2 and float(np.ptp(values)) > 0
    out: dict[str, object] = {
        "seeds": len(values),
        "mean": float(values.mean()) if len(values) else nan,
        "seeds_low": seeds.low if seeds and varies else nan,
        "seeds_high": seeds.high if seeds and varies else nan,
        "days": 0,
        "days_low": nan,
        "days_high": nan,
        "sharpe_daily": nan,
        "psr": nan,
    }
    if len(outcomes):
        out |= _day_statistics(_modal(outcomes), metric, settings)
    if not np.isfinite(out["mean"]):  # no interval around an undefined value
        out |= {"days_low": nan, "days_high": nan}
    if varies:
        out |= {"low": out["seeds_low"], "high": out["seeds_high"], "interval": "seeds"}
    elif math.isfinite(out["days_low"]):  # type: ignore[arg-type]
        out |= {"low": out["days_low"], "high": out["days_high"], "interval": "days"}
    else:
        out |= {"low": nan, "high": nan, "interval": NO_INTERVAL}
    return out


def _day_statistics(
    outcomes: pd.DataFrame, metric: str, settings: InferenceSettings
) -> dict[str, object]:
    """The days interval of the metric and the Sharpe/PSR of the seed-mean daily returns."""
    matrix = day_matrix(outcomes)
    if matrix is None:
        return {}
    mean_returns = matrix.mean(axis=1)
    out: dict[str, object] = {"days": len(mean_returns)}
    sd = float(mean_returns.std(ddof=1)) if len(mean_returns) > 1 else 0.0
    if sd > 0:
        out["sharpe_daily"] = float(mean_returns.mean()) / sd
        out["psr"] = probabilistic_sharpe(mean_returns)
    bench = day_matrix(outcomes, "index_returns")
    if metric in STATISTICS and metric != "mean":
        if metric == "information_ratio" and bench is None:
            return out
        ci = block_interval(
            matrix if metric != "information_ratio" else matrix - bench,
            "sharpe" if metric == "information_ratio" else metric,  # type: ignore[arg-type]
            confidence=settings.confidence,
            resamples=settings.resamples,
            seed=settings.seed,
            periods_per_year=settings.periods_per_year,
        )
        out |= {"days_low": ci.low, "days_high": ci.high}
    return out


def deflate(board: pd.DataFrame, returns: dict[int, np.ndarray]) -> pd.Series:
    """The deflated Sharpe ratio of every row with daily returns (`returns`: board index
    -> the row's seed-mean daily returns): each row's PSR against the Sharpe ratio the
    best of N rows would show by luck, N the rows with returns and V the variance of
    their per-period Sharpe ratios (docs/statistics.md)."""
    out = pd.Series(np.nan, index=board.index, dtype=float)
    ratios = board.loc[list(returns), "sharpe_daily"].astype(float)
    ratios = ratios[np.isfinite(ratios)]
    if ratios.empty:
        return out
    var = float(ratios.var(ddof=1)) if len(ratios) > 1 else 0.0
    for i in ratios.index:
        out[i] = deflated_sharpe(returns[i], len(ratios), var)
    return out
