"""Paired comparisons of board rows, Holm's adjustment, significance ranks, the memory gap.

Two rows of one cell are compared on what they share: the same seeds that ran the same
number of days (a reference that ran once per window pairs with every seed). For each
pair of rows:

- over seeds: the paired t-test of the per-seed metric differences (interval and
  p-value), defined from two pairs whose differences vary;
- over days: the stationary block bootstrap of the metric difference, both rows'
  episodes resampled on the same days (`metrics.block_bootstrap.paired_block_difference`),
  for total return, Sharpe and IR;
- the Sharpe difference of the rows' seed-mean daily returns with the Jobson-Korkie-Memmel
  test (`metrics.sharpe_inference.sharpe_difference`).

The p-value that decides (`p`) is the seeds test where it is defined, else the days test;
`source` says which. Every row is also compared with the index over its own episodes'
days (the index returns each episode recorded). Holm's adjustment runs over every
comparison on one board (`p_holm`); a row ranks below another only where their adjusted
p-value is under 1 - confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tradebench.inference.rows import InferenceSettings, day_matrix, per_seed, seed_key
from tradebench.metrics.block_bootstrap import STATISTICS, paired_block_difference
from tradebench.metrics.sharpe_inference import sharpe_difference
from tradebench.metrics.stats import holm_adjust, paired_t

INDEX = "index"
"""Label of the index on the other side of a comparison."""
COMPARISON_COLUMNS = [
    "a",
    "b",
    "pairs",
    "difference",
    "low",
    "high",
    "source",
    "p",
    "p_holm",
    "significant",
    "seeds_low",
    "seeds_high",
    "seeds_p",
    "days",
    "days_difference",
    "days_low",
    "days_high",
    "days_p",
    "sharpe_difference",
    "sharpe_p",
]
"""One comparison: row `a` minus row `b` (board indices; `b` is -1 for the index)."""
GAP_LEVELS = ("blinded", "stock_blind", "date_blind")
"""Masks the bright run is compared with, fully blinded first."""
GAP_COLUMNS = ["a", "b", "level"]

__all__ = [
    "COMPARISON_COLUMNS",
    "GAP_COLUMNS",
    "GAP_LEVELS",
    "INDEX",
    "InferenceSettings",
    "compare_rows",
    "comparisons",
    "memory_gaps",
    "significance_ranks",
]


def _pairs(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Per-seed outcomes of two rows joined on seed and step count (a row of one
    seedless outcome pairs with every seed of the other)."""
    left, right = per_seed(a), per_seed(b)
    if left["seed"].isna().all() and len(left) == 1:
        left = pd.concat([left.assign(seed=s) for s in right["seed"]], ignore_index=True)
    elif right["seed"].isna().all() and len(right) == 1:
        right = pd.concat([right.assign(seed=s) for s in left["seed"]], ignore_index=True)
    left = left.assign(seed=seed_key(left["seed"]))
    right = right.assign(seed=seed_key(right["seed"]))
    return left.merge(right, on=["seed", "n_steps"], suffixes=("_a", "_b"))


def compare_rows(
    a: pd.DataFrame, b: pd.DataFrame | None, metric: str, settings: InferenceSettings
) -> dict[str, object]:
    """Row `a` minus row `b` (episode tables as in `inference.rows`) on their paired
    seeds, or minus the index over `a`'s own days when `b` is None (module docstring)."""
    if b is None:
        own = per_seed(a)
        joined = own.rename(columns={"value": "value_a", "returns": "returns_a"})
        joined["value_b"] = np.nan
        joined["returns_b"] = joined["index_returns"]
        joined["index_returns_a"] = joined["index_returns"]
        joined = _with_index_values(joined, a)
    else:
        joined = _pairs(a, b)
    nan = float("nan")
    diffs = (joined["value_a"] - joined["value_b"]).to_numpy(dtype=float)
    diffs = diffs[np.isfinite(diffs)]
    seeds = paired_t(diffs, settings.confidence)
    out: dict[str, object] = {
        "pairs": len(diffs),
        "seeds_low": seeds.low,
        "seeds_high": seeds.high,
        "seeds_p": seeds.p_value,
        "days": 0,
        "days_difference": nan,
        "days_low": nan,
        "days_high": nan,
        "days_p": nan,
        "sharpe_difference": nan,
        "sharpe_p": nan,
    }
    out["difference"] = float(diffs.mean()) if len(diffs) else nan
    out |= _days(joined, metric, settings)
    if math.isfinite(seeds.p_value):
        out |= {"low": seeds.low, "high": seeds.high, "p": seeds.p_value, "source": "seeds"}
    elif math.isfinite(out["days_p"]):  # type: ignore[arg-type]
        out |= {"low": out["days_low"], "high": out["days_high"], "p": out["days_p"]}
        out["source"] = "days"
    else:
        out |= {"low": nan, "high": nan, "p": nan, "source": "none"}
    return out


def _with_index_values(joined: pd.DataFrame, episodes: pd.DataFrame) -> pd.DataFrame:
    """The index's metric over each seed's own days (`index_value`, averaged per seed)."""
    index_values = episodes.groupby([seed_key(episodes["seed"]), "n_steps"])["index_value"].mean()
    seeds = seed_key(joined["seed"])
    joined["value_b"] = [
        index_values.get((s, n), np.nan) for s, n in zip(seeds, joined["n_steps"], strict=True)
    ]
    return joined


def _days(joined: pd.DataFrame, metric: str, settings: InferenceSettings) -> dict[str, object]:
    """The day-level comparison of the paired outcomes' daily returns."""
    if joined.empty:
        return {}
    a = day_matrix(joined, "returns_a")
    b = day_matrix(joined, "returns_b")
    if a is None or b is None or a.shape != b.shape:
        return {}
    out: dict[str, object] = {"days": a.shape[0]}
    jkm = sharpe_difference(a.mean(axis=1), b.mean(axis=1))
    scale = math.sqrt(settings.periods_per_year)
    out |= {"sharpe_difference": jkm.difference * scale, "sharpe_p": jkm.p_value}
    if metric not in STATISTICS or metric == "mean":
        return out
    bench = day_matrix(joined, "index_returns_a")
    if metric == "information_ratio":
        if bench is None:
            return out
        a, b = a - bench, b - bench
    ci = paired_block_difference(
        a,
        b,
        "sharpe" if metric == "information_ratio" else metric,  # type: ignore[arg-type]
        confidence=settings.confidence,
        resamples=settings.resamples,
        seed=settings.seed,
        periods_per_year=settings.periods_per_year,
    )
    out |= {
        "days_difference": ci.estimate,
        "days_low": ci.low,
        "days_high": ci.high,
        "days_p": ci.p_value,
    }
    return out


def comparisons(
    cells: Sequence[pd.DataFrame],
    episodes: dict[int, pd.DataFrame],
    metric: str,
    settings: InferenceSettings,
) -> pd.DataFrame:
    """Every comparison on one board (`COMPARISON_COLUMNS`): within each cell (a board
    table of rows whose index keys `episodes`), each pair of rows (the better-placed row
    first, by mean) and each row against the index (`b` = -1; rows that are the index
    are skipped), with Holm's adjustment over all of them."""
    records = []
    for cell in cells:
        order = cell.sort_values("mean", ascending=False, na_position="last").index
        plain = [i for i in order if cell.loc[i, "kind"] != "benchmark"]
        for pos, i in enumerate(plain):
            for j in plain[pos + 1 :]:
                result = compare_rows(episodes[i], episodes[j], metric, settings)
                records.append({"a": i, "b": j, **result})
            records.append({"a": i, "b": -1, **compare_rows(episodes[i], None, metric, settings)})
    table = pd.DataFrame(
        records, columns=[c for c in COMPARISON_COLUMNS if c not in {"p_holm", "significant"}]
    )
    table["p_holm"] = holm_adjust(table["p"].to_numpy(dtype=float)) if len(table) else []
    alpha = 1 - settings.confidence
    table["significant"] = table["p_holm"] < alpha
    return table[COMPARISON_COLUMNS]


def significance_ranks(
    rows: Sequence[int], table: pd.DataFrame, index_row: int | None = None
) -> dict[int, int]:
    """Rank of each row among `rows` (board indices of one cell): 1 + the number of rows
    significantly better (Holm-adjusted) than it. `index_row` is the index's board row,
    which the comparisons against the index (`b` = -1) place."""
    better: dict[int, set[int]] = {i: set() for i in rows}
    a = table["a"].to_numpy(dtype=int)
    b = table["b"].to_numpy(dtype=int)
    if index_row is not None:
        b = np.where(b == -1, index_row, b)
    difference = table["difference"].to_numpy(dtype=float)
    for k in np.flatnonzero(table["significant"].to_numpy(dtype=bool)):
        if a[k] not in better or b[k] not in better:
            continue
        if difference[k] > 0:
            better[int(b[k])].add(int(a[k]))
        elif difference[k] < 0:
            better[int(a[k])].add(int(b[k]))
    return {i: 1 + len(better[i]) for i in rows}


def memory_gaps(board: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The memory gap: for every model row under the `bright` mask, bright minus each
    blinded level of the same agent, mode and window (`GAP_COLUMNS` plus the
    comparison's columns, the sign turned to bright minus the level)."""
    models = board[board["kind"] == "llm"]
    keyed = table.set_index(["a", "b"])
    rows = []
    for i in models.index[models["mask"] == "bright"]:
        same = models[
            (models["identity"] == models.loc[i, "identity"])
            & (models["mode"] == models.loc[i, "mode"])
            & (models["window_start"] == models.loc[i, "window_start"])
            & (models["window_end"] == models.loc[i, "window_end"])
        ]
        for level in GAP_LEVELS:
            for j in same.index[same["mask"] == level]:
                rows.append({"a": i, "b": j, "level": level, **_oriented(keyed, i, j)})
    return pd.DataFrame(rows, columns=[*GAP_COLUMNS, *COMPARISON_COLUMNS[2:]])


def _oriented(keyed: pd.DataFrame, i: int, j: int) -> dict[str, object]:
    """Comparison i minus j from a table that holds it either way round."""
    if (i, j) in keyed.index:
        return keyed.loc[(i, j)].to_dict()
    row = keyed.loc[(j, i)].to_dict()
    for col in ("difference", "days_difference", "sharpe_difference"):
        row[col] = -row[col]
    for lo, hi in (("low", "high"), ("seeds_low", "seeds_high"), ("days_low", "days_high")):
        row[lo], row[hi] = -row[hi], -row[lo]
    return row
