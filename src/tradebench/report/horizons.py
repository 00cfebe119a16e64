"""Compare episodes over the same decision days.

Every episode of a window starts on the window's first trading day, but some stop early
(an agent's `max_steps`, the benchmark's `max_steps`), so a 2-step model episode and a
21-step baseline would otherwise be ranked on returns over different spans. The report
therefore ranks:

- episodes that ran their window's full length (the longest finished episode of the
  window) against each other, on their own recorded metrics; and
- for every shorter length `h` that some finished episode ran (a *horizon*), every
  finished episode of at least `h` days, the index included, on its first `h` decision
  days: the metric panel recomputed from its recorded steps, positions and orders with
  the same functions (`metrics.panel.compute_panel`), the index from its recorded closes
  and its level before the window.

An episode whose first `h` days are not the horizon's days in its window, or that has no
broker tables (another benchmark's episode, a folder from before positions were written),
is left out of that horizon and named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from tradebench.errors import DataError
from tradebench.metrics.panel import compute_panel
from tradebench.report.load import EpisodeTables, RunData, read_episode_tables
from tradebench.runs.summary import metric_values

WINDOW = ["window_start", "window_end"]

__all__ = ["Horizon", "full_length", "horizons", "rescore", "short_episodes", "window_lengths"]


@dataclass(frozen=True)
class Horizon:
    """One comparison over each window's first `steps` decision days."""

    steps: int
    """Decision days compared, from each window's first."""
    short: pd.DataFrame
    """Summary rows of the finished episodes that ran exactly `steps` days while their
    window ran longer (why the horizon exists)."""
    summary: pd.DataFrame
    """Summary rows of every finished episode of at least `steps` days, its metric columns
    recomputed over its first `steps` days (`n_steps` = `steps`)."""
    days: pd.DataFrame
    """Per window: window_start, window_end, first and last decision day compared."""
    left_out: tuple[str, ...]
    """Ids of episodes that could not be rescored over these days."""


def window_lengths(summary: pd.DataFrame) -> pd.Series:
    """Per finished episode (indexed like `summary`): its window's full length, the most
    steps any finished episode of that window ran."""
    done = summary[summary["status"] == "done"]
    keys = done[WINDOW].astype(str).agg("|".join, axis=1)
    return done["n_steps"].groupby(keys).transform("max")


def short_episodes(summary: pd.DataFrame) -> pd.DataFrame:
    """Finished episodes that ran fewer steps than their window's full length."""
    full = window_lengths(summary)
    done = summary.loc[full.index]
    return done[done["n_steps"] < full]


def full_length(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary without the short finished episodes (unfinished rows are kept; the
    performance tables drop them anyway)."""
    return summary.drop(index=short_episodes(summary).index)


def rescore(tables: EpisodeTables, steps: int) -> dict[str, float]:
    """An episode's summary metric columns over its first `steps` decision days.

    Raises:
        DataError: the tables are not a broker episode's.
    """
    head = tables.steps.iloc[:steps].copy()
    head["date"] = pd.to_datetime(head["date"])
    days = set(head["date"])
    positions = tables.positions
    if len(positions):
        positions = positions[pd.to_datetime(positions["date"]).isin(days)]
    orders = tables.orders
    if len(orders) and "date" in orders:
        orders = orders[pd.to_datetime(orders["date"]) <= head["date"].max()]
    panel = compute_panel(
        head,
        positions,
        orders,
        initial_cash=tables.initial_cash,
        benchmark_start=tables.benchmark_start,
    )
    return metric_values(json.loads(panel.to_json()))


def _window_key(row: dict) -> tuple[str, str]:
    return (str(row[WINDOW[0]]), str(row[WINDOW[1]]))


def _reference_days(
    run: RunData, done: pd.DataFrame, short: pd.DataFrame, steps: int
) -> dict[tuple[str, str], list[pd.Timestamp]]:
    """Per window: the horizon's days, those of a short episode of that length, else the
    first `steps` days of the window's longest episode."""
    exact = {
        _window_key(r): r["episode_id"]
        for r in short[short["n_steps"] == steps].to_dict("records")[::-1]
    }
    longest: dict[tuple[str, str], str] = {}
    ranked = done.sort_values(["n_steps", "episode_id"], ascending=[True, False], kind="stable")
    for r in ranked.to_dict("records"):
        longest[_window_key(r)] = r["episode_id"]
    return {
        key: list(pd.to_datetime(run.steps[exact.get(key, episode)]["date"]).iloc[:steps])
        for key, episode in sorted(longest.items())
    }


def _horizon(run: RunData, short: pd.DataFrame, steps: int, cache: dict) -> Horizon:
    """The rescored summary of every finished episode of at least `steps` days."""
    done = run.done()
    done = done[done["episode_id"].isin(list(run.steps))]
    reference = _reference_days(run, done, short, steps)
    rows, left_out = [], []
    for row in done[done["n_steps"] >= steps].to_dict("records"):
        episode = row["episode_id"]
        dates = list(pd.to_datetime(run.steps[episode]["date"]).iloc[:steps])
        if episode not in cache:
            cache[episode] = read_episode_tables(run, episode)
        tables = cache[episode]
        if tables is None or dates != reference[_window_key(row)]:
            left_out.append(episode)
            continue
        try:
            rows.append({**row, **rescore(tables, steps), "n_steps": steps})
        except DataError:
            left_out.append(episode)
    summary = pd.DataFrame(rows, columns=run.summary.columns).astype(run.summary.dtypes)
    days = pd.DataFrame(
        [(w[0], w[1], d[0], d[-1]) for w, d in reference.items() if d],
        columns=[*WINDOW, "first_day", "last_day"],
    )
    shorts = short[short["n_steps"] == steps]
    return Horizon(steps, shorts, summary, days, tuple(sorted(left_out)))


def horizons(run: RunData) -> list[Horizon]:
    """One horizon per shorter length a finished episode ran, longest first; empty when
    every finished episode ran its window's full length (the common case)."""
    summary = run.summary[run.summary["episode_id"].isin(list(run.steps))]
    short = short_episodes(summary)
    cache: dict[str, EpisodeTables | None] = {}
    lengths = sorted({int(n) for n in short["n_steps"] if n > 0}, reverse=True)
    return [_horizon(run, short, h, cache) for h in lengths]
