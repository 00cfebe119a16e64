"""Honest ranks and flags for the report's metric panel.

The panel (`tables.metric_panel`) orders rows by mean total return. Short runs make that
order mostly noise, so the report ranks them the way the leaderboard does
(`tradebench.inference`, docs/statistics.md):

- each row's total return gets its interval: over seeds (Student t) where seeds differ,
  else over days (the stationary block bootstrap of the row's daily returns), else none;
- every pair of rows, and every row against the index, is compared on what they share
  (paired seeds, else the same days), Holm-adjusted over the table; a row's rank is
  1 + the number of rows significantly better than it, so rows the data cannot separate
  share a rank;
- a row is flagged where its figure deserves doubt: `no trades` (no order filled),
  `all fallbacks` (a model that fell back on every step), `one seed` (a model row of a
  single seed), `N days` (fewer than `MIN_ANNUALISED_DAYS` decision days);
- annualised ratios of a row with fewer than `MIN_ANNUALISED_DAYS` days are shown per
  day instead (Sharpe and IR divided by sqrt(252), turnover by 252): a ratio scaled up
  from a few days to a year reads as a finding it is not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from tradebench.inference import InferenceSettings, comparisons, row_statistics
from tradebench.inference.pairs import significance_ranks
from tradebench.inference.rows import seed_key
from tradebench.metrics.returns import TRADING_DAYS_PER_YEAR
from tradebench.report.load import RunData
from tradebench.report.tables import GROUP_KEYS, WINDOW_KEYS
from tradebench.runs.store import read_run_record

MIN_ANNUALISED_DAYS = 20
"""Fewest decision days behind a row for its annualised ratios to be shown as such."""
ANNUAL_FACTORS: Mapping[str, float] = {
    "sharpe": math.sqrt(TRADING_DAYS_PER_YEAR),
    "information_ratio": math.sqrt(TRADING_DAYS_PER_YEAR),
    "annualized_turnover": float(TRADING_DAYS_PER_YEAR),
}
"""Panel metrics that are annualised, and the factor that annualised them."""
RANK_METRIC = "total_return"
"""The metric the panel ranks on."""
TRADED = ("filled", "partial")
"""Order statuses that moved a position."""
NO_TRADES, ALL_FALLBACKS, ONE_SEED = "no trades", "all fallbacks", "one seed"
RANK_COLUMNS = ["rank", "low", "high", "interval", "flags", "days", "per_day"]
"""What `rank_panel` adds to the panel: the significance rank, the interval of the mean
total return and what it is over (`seeds`, `days`, `none`), the flags (comma-separated),
the fewest decision days of the row's episodes, and whether its annualised metrics are
shown per day."""

__all__ = [
    "ALL_FALLBACKS",
    "ANNUAL_FACTORS",
    "MIN_ANNUALISED_DAYS",
    "NO_TRADES",
    "ONE_SEED",
    "RANK_COLUMNS",
    "days_flag",
    "episode_fallbacks",
    "episode_traded",
    "interval_text",
    "per_day_factor",
    "rank_panel",
    "row_flags",
    "shows_per_day",
]


def days_flag(days: int) -> str:
    """The flag of a row behind fewer than `MIN_ANNUALISED_DAYS` decision days."""
    return f"{days} day" if days == 1 else f"{days} days"


def interval_text(low: float, high: float, over: str) -> str:
    """`[low, high] (over)` of an interval to four places, `–` without one."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "–"
    return f"[{low:.4f}, {high:.4f}] ({over})"


def _daily(values: np.ndarray, start: float | None) -> np.ndarray | None:
    """Daily simple returns of an end-of-day series from the value the day before."""
    if start is None or len(values) == 0:
        return None
    path = np.concatenate([[float(start)], values])
    if not np.isfinite(path).all() or (path <= 0).any():
        return None
    return path[1:] / path[:-1] - 1


def _steps_column(run: RunData, episode_id: str, column: str, days: int) -> np.ndarray:
    """The first `days` values of a step column as floats (empty without steps)."""
    steps = run.steps.get(episode_id)
    if steps is None or column not in steps:
        return np.array([], dtype=float)
    return pd.to_numeric(steps[column], errors="coerce").to_numpy(dtype=float)[:days]


def _index_start(run: RunData, episode_id: str) -> float | None:
    """The index close the day before the window, from the episode's `run.json`."""
    record = read_run_record(run.episode_dir(episode_id))
    return record.benchmark_start if record else None


def _episode(run: RunData, row: pd.Series, *, index: bool) -> dict[str, object]:
    """One summary row as an `inference.rows` episode over its own `n_steps` days; the
    index's own figures when `index` (its returns, its total return, no seed)."""
    eid = str(row["episode_id"])
    days = int(row["n_steps"])
    close = _steps_column(run, eid, "benchmark_close", days)
    index_returns = _daily(close, _index_start(run, eid))
    index_value = float(row.get("benchmark_total_return", np.nan))
    if index:
        value = float(row[RANK_METRIC]) if row["kind"] == "benchmark" else index_value
        return {
            "seed": np.nan,
            "n_steps": days,
            "value": value,
            "returns": index_returns,
            "index_returns": index_returns,
            "index_value": value,
        }
    nav = _steps_column(run, eid, "nav", days)
    return {
        "seed": row["seed"],
        "n_steps": days,
        "value": float(row[RANK_METRIC]),
        "returns": _daily(nav, run.initial_cash.get(eid)),
        "index_returns": index_returns,
        "index_value": index_value,
    }


def _row_summary(done: pd.DataFrame, panel_row: pd.Series) -> pd.DataFrame:
    """The finished summary rows behind one panel row (the index: its own episodes, else
    one agent episode per window, whose benchmark columns carry it)."""
    if panel_row["is_benchmark"]:
        own = done[done["kind"] == "benchmark"]
        return own if not own.empty else done.drop_duplicates(WINDOW_KEYS)
    agents = done[done["kind"] != "benchmark"]
    same = np.ones(len(agents), dtype=bool)
    for key in GROUP_KEYS:
        same &= (agents[key] == panel_row[key]).to_numpy()
    return agents[same]


def episode_traded(steps: pd.DataFrame | None, orders: pd.DataFrame | None, days: int) -> bool:
    """Whether any order of an episode filled within its first `days` decision days."""
    if orders is None or orders.empty or steps is None or steps.empty:
        return False
    last = pd.to_datetime(steps["date"]).iloc[:days].max()
    dates = pd.to_datetime(orders["date"])
    return bool((orders["status"].isin(TRADED) & (dates <= last)).any())


def episode_fallbacks(steps: pd.DataFrame | None, days: int) -> tuple[int, int] | None:
    """(steps that fell back, steps) over an episode's first `days` decision days; None
    where its steps record no `fallback` (not a model, or no steps written)."""
    if steps is None or "fallback" not in steps:
        return None
    flags = steps["fallback"].iloc[:days].astype("boolean").fillna(False)
    return int(flags.sum()), len(flags)


def row_flags(
    kind: str,
    traded: Iterable[bool],
    fallbacks: Iterable[tuple[int, int] | None],
    seeds: pd.Series,
    days: int,
) -> str:
    """The comma-separated flags of one ranked row (module docstring) from its episodes'
    facts: whether each traded (`episode_traded`), its fallback count (`episode_fallbacks`)
    and its seed, and the row's fewest decision days. The report's panel and the
    leaderboard both flag rows here."""
    flags = []
    if kind != "benchmark" and not any(traded):
        flags.append(NO_TRADES)
    counts = list(fallbacks)
    if kind == "llm" and counts and all(c is not None for c in counts):
        fell, steps = (sum(c[i] for c in counts if c is not None) for i in (0, 1))
        if steps > 0 and fell == steps:
            flags.append(ALL_FALLBACKS)
    if kind == "llm" and seed_key(seeds).nunique() == 1:
        flags.append(ONE_SEED)
    if days < MIN_ANNUALISED_DAYS:
        flags.append(days_flag(days))
    return ", ".join(flags)


def shows_per_day(days: int) -> bool:
    """Whether a row behind `days` decision days shows its annualised figures per day."""
    return days < MIN_ANNUALISED_DAYS


def per_day_factor(metric: str, per_day: bool) -> float:
    """What divides a figure of `metric` to show it: its annualisation factor
    (`ANNUAL_FACTORS`) in a `per_day` row, so the raw daily figure shows, else 1."""
    return ANNUAL_FACTORS.get(metric, 1.0) if per_day else 1.0


def _flags(run: RunData, rows: pd.DataFrame, kind: str, days: int) -> str:
    """The flags of one panel row from the run's own step and order tables."""
    traded, fallbacks = [], []
    for row in rows.itertuples(index=False):
        eid, own = str(row.episode_id), int(row.n_steps)
        steps = run.steps.get(eid)
        traded.append(episode_traded(steps, run.orders.get(eid), own))
        fallbacks.append(episode_fallbacks(steps, own))
    return row_flags(kind, traded, fallbacks, rows["seed"], days)


def _per_day(panel: pd.DataFrame, per_day: pd.Series) -> pd.DataFrame:
    """The panel with each annualised metric of a `per_day` row divided back to a daily
    figure (its mean and its std, both linear in the factor)."""
    out = panel.copy()
    for metric, factor in ANNUAL_FACTORS.items():
        for stat in ("mean", "std"):
            column = f"{metric}_{stat}"
            if column in out:
                values = pd.to_numeric(out[column], errors="coerce").astype(float)
                out[column] = values.where(~per_day, values / factor)
    return out


def rank_panel(
    run: RunData,
    summary: pd.DataFrame,
    panel: pd.DataFrame,
    settings: InferenceSettings | None = None,
) -> pd.DataFrame:
    """`panel` (a `tables.metric_panel(summary)`) re-ranked and flagged: `rank` the
    significance rank, `RANK_COLUMNS` added, annualised metrics per day where `per_day`,
    sorted by rank then mean total return (module docstring)."""
    settings = settings or InferenceSettings()
    done = summary[summary["status"] == "done"]
    episodes: dict[int, pd.DataFrame] = {}
    extra: list[dict[str, object]] = []
    for i, panel_row in panel.iterrows():
        rows = _row_summary(done, panel_row)
        is_index = bool(panel_row["is_benchmark"])
        own = pd.DataFrame([_episode(run, r, index=is_index) for _, r in rows.iterrows()])
        episodes[int(i)] = own
        stats = row_statistics(own, RANK_METRIC, settings) if len(own) else {}
        days = int(rows["n_steps"].min()) if len(rows) else 0
        extra.append(
            {
                "low": stats.get("low", np.nan),
                "high": stats.get("high", np.nan),
                "interval": stats.get("interval", "none"),
                "flags": _flags(run, rows, str(panel_row["kind"]), days),
                "days": days,
                "per_day": shows_per_day(days),
            }
        )
    out = pd.concat([panel.drop(columns="rank"), pd.DataFrame(extra, index=panel.index)], axis=1)
    means = pd.to_numeric(out[f"{RANK_METRIC}_mean"], errors="coerce").astype(float)
    cell = pd.DataFrame({"mean": means, "kind": out["kind"]}, index=out.index)
    table = comparisons([cell], episodes, RANK_METRIC, settings)
    index_rows = out.index[out["is_benchmark"].astype(bool)]
    ranked = [int(i) for i in out.index if np.isfinite(means[i])]
    ranks = significance_ranks(ranked, table, int(index_rows[0]) if len(index_rows) else None)
    out.insert(0, "rank", pd.array([ranks.get(int(i)) for i in out.index], dtype="Int64"))
    out = _per_day(out, out["per_day"].astype(bool))
    order = out.assign(_mean=means).sort_values(
        ["rank", "_mean"], ascending=[True, False], na_position="last", kind="stable"
    )
    return order.drop(columns="_mean").reset_index(drop=True)
