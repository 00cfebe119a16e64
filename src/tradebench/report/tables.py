"""The report's aggregations: pure functions from run data to DataFrames.

Conventions shared by every table (see `docs/report.md`):
- A *group* is one (agent, kind, mode, mask); seeds and windows of a group are pooled.
- Performance tables use finished episodes only (`status == "done"`); token and cost
  totals count every episode, since unfinished episodes spent them too.
- Means are plain means over episodes; std is the sample std (ddof = 1), NaN for one.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from tradebench.metrics import FAULT_COUNT_COLUMNS
from tradebench.report.load import ORDER_COLUMNS, RunData
from tradebench.runs.guard import TRANSPORT_KEYS, agent_without_transport
from tradebench.runs.spec import flat_agent_entry
from tradebench.runs.summary import (
    FAULT_TOTAL_COLUMNS,
    METRIC_COLUMNS,
    NOT_APPLICABLE,
    STATUSES,
    mask_order,
    ordered,
)

GROUP_KEYS = ["agent", "kind", "mode", "mask"]
"""Columns that identify a group of seed replicates."""
WINDOW_KEYS = ["window_start", "window_end"]
"""Columns that identify an evaluation window."""
STATS = ("mean", "std")
"""Suffixes of the metric panel's per-metric columns."""
BENCHMARK_LABEL = "benchmark index"
"""Agent label of the benchmark row and curve."""

__all__ = [
    "BENCHMARK_LABEL",
    "GROUP_KEYS",
    "benchmark_curves",
    "equity_curves",
    "fault_totals",
    "greedy_seed_agents",
    "group_label",
    "llm_agents",
    "metric_panel",
    "mode_mask_matrix",
    "panel_steps",
    "rejection_counts",
    "result_spec",
    "sample_rationales",
    "spec_modes",
    "spec_overview",
    "status_counts",
    "step_counts",
    "usage_totals",
    "window_label",
]


def group_label(agent: str, mode: str, mask: str) -> str:
    """Display name of a group: the agent, plus mode and mask when they apply."""
    parts = [agent] + [p for p in (mode, mask) if p != NOT_APPLICABLE]
    return " · ".join(parts)


def window_label(start: str | None, end: str | None) -> str:
    """Display name of a window, `start → end`."""
    return f"{start or '?'} → {end or '?'}"


def spec_modes(run: RunData) -> list[str]:
    """The run's modes in the order its spec lists them (the display order)."""
    modes = run.spec.get("modes") or []
    return [str(m) for m in modes] if isinstance(modes, list) else []


def status_counts(summary: pd.DataFrame) -> pd.DataFrame:
    """Episodes per kind (rows) and status (columns), with totals."""
    table = pd.crosstab(summary["kind"], summary["status"], margins=True, margins_name="total")
    statuses = ordered(summary["status"], STATUSES)
    return table.reindex(columns=[*statuses, "total"], fill_value=0)


def _normalised_nav(run: RunData, episode_id: str) -> pd.Series:
    """NAV / start capital, indexed by date."""
    steps = run.steps[episode_id]
    nav = pd.to_numeric(steps["nav"], errors="coerce").to_numpy(float)
    return pd.Series(nav / run.initial_cash[episode_id], index=steps["date"])


def equity_curves(run: RunData) -> pd.DataFrame:
    """Seed-averaged normalised NAV per group and window, on the dates all seeds share.

    Columns: window_start, window_end, agent, kind, mode, mask, date, mean, std, n_seeds.
    The benchmark kind is left out (`benchmark_curves` draws the index).
    """
    done = run.done()
    done = done[(done["kind"] != "benchmark") & done["episode_id"].isin(list(run.steps))]
    frames = []
    keys = [*WINDOW_KEYS, *GROUP_KEYS]
    for key, group in done.groupby(keys, dropna=False, sort=True):
        wide = pd.DataFrame({e: _normalised_nav(run, e) for e in group["episode_id"]})
        wide = wide.dropna(how="any")
        if wide.empty:
            continue
        part = pd.DataFrame(
            {
                "date": wide.index,
                "mean": wide.mean(axis=1).to_numpy(),
                "std": wide.std(axis=1, ddof=1).to_numpy(),
                "n_seeds": wide.shape[1],
            }
        )
        frames.append(part.assign(**dict(zip(keys, key, strict=True))))
    columns = [*keys, "date", "mean", "std", "n_seeds"]
    return pd.concat(frames)[columns] if frames else pd.DataFrame(columns=columns)


def _implied_base(close: np.ndarray, total_return: float) -> float:
    """Index level before the window: last close / (1 + benchmark total return)."""
    if np.isfinite(total_return) and total_return > -1 and np.isfinite(close[-1]):
        return float(close[-1] / (1.0 + total_return))
    return float(close[0])


def benchmark_curves(run: RunData) -> pd.DataFrame:
    """The benchmark index per window, normalised to 1 the day before the window.

    Read from the longest finished episode of the window (`benchmark_close`), its base
    implied by that episode's `benchmark_total_return`. Columns: window_start,
    window_end, date, value.
    """
    done = run.done()
    done = done[done["episode_id"].isin(list(run.steps))]
    frames = []
    for (start, end), group in done.groupby(WINDOW_KEYS, dropna=False, sort=True):
        lengths = group["episode_id"].map(lambda e: len(run.steps[e]))
        row = group.loc[lengths.idxmax()]
        steps = run.steps[row["episode_id"]]
        close = pd.to_numeric(steps["benchmark_close"], errors="coerce").to_numpy(float)
        if len(close) == 0 or not np.isfinite(close).any():
            continue
        value = close / _implied_base(close, row["benchmark_total_return"])
        frames.append(
            pd.DataFrame(
                {"window_start": start, "window_end": end, "date": steps["date"], "value": value}
            )
        )
    columns = [*WINDOW_KEYS, "date", "value"]
    return pd.concat(frames)[columns] if frames else pd.DataFrame(columns=columns)


def _aggregate(frame: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Per group: episode count, mean and sample std of each metric."""
    grouped = frame.groupby(GROUP_KEYS, dropna=False, sort=True)
    parts = [
        grouped.size().rename("n"),
        grouped[metrics].mean().add_suffix("_mean"),
        grouped[metrics].std(ddof=1).add_suffix("_std"),
    ]
    return pd.concat(parts, axis=1).reset_index()


def _benchmark_episodes(done: pd.DataFrame) -> pd.DataFrame:
    """One metric row per window for the index: its own episodes, else the benchmark_*
    columns of the agents' episodes (which carry only return, Sharpe and drawdown)."""
    own = done[done["kind"] == "benchmark"]
    if own.empty:
        values = dict.fromkeys(METRIC_COLUMNS, np.nan)
        values |= {m: done[f"benchmark_{m}"] for m in ("total_return", "sharpe", "max_drawdown")}
        own = done[[*WINDOW_KEYS, "n_steps"]].assign(**values)
    own = own.drop_duplicates(WINDOW_KEYS)
    return own.assign(
        agent=BENCHMARK_LABEL, kind="benchmark", mode=NOT_APPLICABLE, mask=NOT_APPLICABLE
    )


def metric_panel(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean (and std) of every metric per group, the benchmark index as one more row.

    Rows are sorted by mean total return, best first (undefined last), so the index
    sits at its return-implied rank. Columns: rank, agent, kind, mode, mask, n,
    is_benchmark, `<metric>_mean`, `<metric>_std`.
    """
    done = summary[summary["status"] == "done"]
    metrics = list(METRIC_COLUMNS)
    if done.empty:
        columns = ["rank", *GROUP_KEYS, "n", "is_benchmark"]
        return pd.DataFrame(columns=columns + [f"{m}_{s}" for m in metrics for s in STATS])
    agents = _aggregate(done[done["kind"] != "benchmark"], metrics).assign(is_benchmark=False)
    bench = _aggregate(_benchmark_episodes(done), metrics).assign(is_benchmark=True)
    panel = pd.concat([f for f in (agents, bench) if not f.empty], ignore_index=True)
    panel = panel.sort_values(
        "total_return_mean", ascending=False, na_position="last", kind="stable"
    ).reset_index(drop=True)
    panel.insert(0, "rank", np.arange(1, len(panel) + 1))
    return panel


def panel_steps(summary: pd.DataFrame, panel: pd.DataFrame) -> list[str]:
    """The decision days behind each row of `metric_panel(summary)`: the distinct step
    counts of the row's finished episodes (`step_counts`)."""
    done = summary[summary["status"] == "done"]
    agents = done[done["kind"] != "benchmark"].groupby(GROUP_KEYS, dropna=False, sort=True)
    steps = {key: step_counts(group["n_steps"]) for key, group in agents}
    bench = step_counts(_benchmark_episodes(done)["n_steps"]) if len(done) else "–"
    keys = panel[GROUP_KEYS].itertuples(index=False, name=None)
    return [
        bench if is_bench else steps.get(key, "–")
        for is_bench, key in zip(panel["is_benchmark"], keys, strict=True)
    ]


def greedy_seed_agents(run: RunData) -> list[str]:
    """Model agents whose seeds are not independent samples: temperature 0 in a spec with
    several seeds (their seeds differ only through the masks' seed-dependent aliases)."""
    seeds = run.spec.get("seeds") or []
    if not isinstance(seeds, list) or len(seeds) < 2:
        return []
    agents = [flat_agent_entry(a) for a in run.spec.get("agents") or [] if isinstance(a, dict)]
    return sorted(str(a.get("name")) for a in agents if a.get("model") and not a.get("temperature"))


def llm_agents(summary: pd.DataFrame) -> list[str]:
    """Agents with finished LLM episodes, sorted."""
    done = summary[(summary["status"] == "done") & (summary["kind"] == "llm")]
    return sorted(done["agent"].unique())


def mode_mask_matrix(
    summary: pd.DataFrame,
    agent: str,
    metric: str = "total_return",
    how: Literal["mean", "count"] = "mean",
    modes: Sequence[str] = (),
) -> pd.DataFrame:
    """One LLM agent's `metric` per (mode, mask) cell over finished episodes.

    `how` is "mean" or "count" (episodes with a defined value). Index `mode` (in `modes`
    order, then the rest sorted), columns `mask` in protocol order; absent cells are NaN
    (0 for counts).
    """
    done = summary[
        (summary["status"] == "done") & (summary["kind"] == "llm") & (summary["agent"] == agent)
    ]
    cells = done.groupby(["mode", "mask"])[metric].agg(how).unstack("mask")
    cells = cells.reindex(
        index=pd.Index(ordered(done["mode"], list(modes)), name="mode"),
        columns=pd.Index(ordered(done["mask"], mask_order()), name="mask"),
    )
    return cells.fillna(0).astype(int) if how == "count" else cells


def _orders_with_meta(run: RunData, episodes: pd.DataFrame) -> pd.DataFrame:
    """Every order of `episodes`, with episode_id, agent, mode and mask prepended."""
    frames = []
    for row in episodes.itertuples(index=False):
        orders = run.orders.get(row.episode_id)
        if orders is None or orders.empty:
            continue
        meta = {"episode_id": row.episode_id, "agent": row.agent, "mode": row.mode}
        frames.append(orders.assign(**meta, mask=row.mask))
    if not frames:
        columns = ["episode_id", "agent", "mode", "mask", *ORDER_COLUMNS, "stock_id_sent"]
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)


def rejection_counts(run: RunData) -> pd.DataFrame:
    """Orders, rejections and each reject code's count per agent (finished episodes;
    the benchmark index places no orders and is left out).

    A code is counted on every order that carries it, whatever the status (a partial
    fill keeps the code of its unfilled part). Columns: agent, orders, rejected,
    partial, then one column per code, most frequent first.
    """
    done = run.done()
    done = done[done["kind"] != "benchmark"]
    orders = _orders_with_meta(run, done)
    agents = sorted(done["agent"].unique())
    codes = orders["reject_code"].dropna().astype(str)
    order = codes.value_counts().sort_index().sort_values(ascending=False, kind="stable")
    table = pd.DataFrame(index=pd.Index(agents, name="agent"))
    table["orders"] = orders.groupby("agent").size()
    table["rejected"] = orders[orders["status"] == "rejected"].groupby("agent").size()
    table["partial"] = orders[orders["status"] == "partial"].groupby("agent").size()
    by_code = pd.crosstab(orders.loc[codes.index, "agent"], codes)
    table = table.join(by_code.reindex(columns=list(order.index)))
    return table.fillna(0).astype(int).reset_index()


def usage_totals(summary: pd.DataFrame) -> pd.DataFrame:
    """Episodes, steps, tokens and cost per LLM agent (every status); with more than one
    agent, a last row `all agents` holds the totals."""
    llm = summary[summary["kind"] == "llm"]
    sums = ["n_steps", "tokens_in", "tokens_out", "cost_usd"]
    grouped = llm.groupby("agent", sort=True)
    table = pd.concat(
        [grouped.size().rename("episodes"), grouped[sums].sum(min_count=1)], axis=1
    ).reset_index()
    if len(table) > 1:
        total = {"agent": "all agents", "episodes": len(llm)}
        total |= {c: llm[c].sum(min_count=1) for c in sums}
        table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    counts = ["n_steps", "tokens_in", "tokens_out"]
    return table.astype(dict.fromkeys(counts, "Int64"))


def fault_totals(summary: pd.DataFrame) -> pd.DataFrame:
    """Endpoint faults per LLM cell (agent, mode, mask; seeds and windows pooled): the sums
    of the episodes' totals of faults by kind, HTTP retries and seconds of backoff and of
    failed attempts. Every status counts (a stopped episode met its faults too; its totals
    are null until it finishes). A sum is null when no episode of the cell recorded it
    (episodes written before faults were). With more than one cell, a last row `all
    cells` holds the totals. Columns: cell, agent, mode, mask, episodes, then
    `FAULT_TOTAL_COLUMNS`."""
    llm = summary[summary["kind"] == "llm"]
    columns = ["cell", "agent", "mode", "mask", "episodes", *FAULT_TOTAL_COLUMNS]
    if llm.empty:
        return pd.DataFrame(columns=columns)
    keys = ["agent", "mode", "mask"]
    grouped = llm.groupby(keys, sort=True, dropna=False)
    values = llm[list(FAULT_TOTAL_COLUMNS)].apply(pd.to_numeric, errors="coerce")
    sums = values.groupby([llm[k] for k in keys], sort=True, dropna=False).sum(min_count=1)
    table = pd.concat([grouped.size().rename("episodes"), sums], axis=1).reset_index()
    table.insert(0, "cell", [group_label(*k) for k in table[keys].itertuples(index=False)])
    if len(table) > 1:
        total = {"cell": "all cells", "agent": "", "mode": "", "mask": "", "episodes": len(llm)}
        total |= {c: values[c].sum(min_count=1) for c in FAULT_TOTAL_COLUMNS}
        table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    return table[columns].astype(dict.fromkeys(["episodes", *FAULT_COUNT_COLUMNS], "Int64"))


def _pick(frame: pd.DataFrame, n: int, seed: int, mask: str) -> pd.DataFrame:
    """Up to `n` rows drawn without replacement, seeded by (seed, mask), in file order."""
    has_reason = frame["reason"].fillna("").astype(str).str.strip() != ""
    pool = frame[has_reason] if has_reason.any() else frame
    rng = np.random.default_rng([seed, zlib.crc32(mask.encode())])
    take = np.sort(rng.choice(len(pool), size=min(n, len(pool)), replace=False))
    return pool.iloc[take]


def sample_rationales(run: RunData, per_mask: int = 5, seed: int = 0) -> pd.DataFrame:
    """Up to `per_mask` seeded-random orders per mask level from finished episodes.

    Orders with a non-empty reason are preferred; `stock_id` is the identifier as the
    model wrote it (`stock_id_sent`), the real symbol where that is absent (baselines).
    Columns: mask, episode_id, agent, mode, date, stock_id, side, confidence, reason,
    status, reject_code.
    """
    done = run.done()
    orders = _orders_with_meta(run, done[done["kind"] != "benchmark"])
    orders = orders.assign(stock_id=orders["stock_id_sent"].astype(object))
    orders["stock_id"] = orders["stock_id"].where(orders["stock_id"].notna(), orders["symbol"])
    orders["confidence"] = pd.to_numeric(orders["confidence"], errors="coerce")
    picks = [
        _pick(orders[orders["mask"] == mask], per_mask, seed, mask)
        for mask in ordered(orders["mask"], (*mask_order(), NOT_APPLICABLE))
    ]
    columns = ["mask", "episode_id", "agent", "mode", "date", "stock_id", "side"]
    columns += ["confidence", "reason", "status", "reject_code"]
    picks = [p for p in picks if not p.empty]
    return pd.concat(picks, ignore_index=True)[columns] if picks else pd.DataFrame(columns=columns)


def _spec_item(value: object) -> str:
    """A list item of a spec: its `name`, a `start → end` window, or `k: v` pairs."""
    if isinstance(value, dict):
        if "name" in value:
            return str(value["name"])
        if "start" in value and "end" in value:
            return window_label(value["start"], value["end"])
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


def _spec_value(value: object, limit: int = 240) -> str:
    """A spec value on one line, cut to `limit` characters."""
    if isinstance(value, list):
        text = ", ".join(_spec_item(v) for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}: {_spec_item(v)}" for k, v in value.items())
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_spec(spec: dict) -> dict:
    """The spec without its transport settings (`runs.guard`: concurrency, budget, cache;
    each agent's endpoint, key variable, timeout and attempts), in the spec's order.

    Those settings change how a run reaches its models, not its results, and a replay
    changes them (cache mode and path, a dead endpoint), so the report leaves them out.
    """
    out = {k: v for k, v in spec.items() if k not in TRANSPORT_KEYS}
    agents = spec.get("agents")
    if isinstance(agents, list):
        out["agents"] = [agent_without_transport(a) if isinstance(a, dict) else a for a in agents]
    return out


def step_counts(values: pd.Series) -> str:
    """Distinct step counts as text: `21`, `20, 21`, or `2–21` beyond three values."""
    counts = sorted({int(v) for v in values.dropna()})
    if not counts:
        return "–"
    if len(counts) > 3:
        return f"{counts[0]}–{counts[-1]}"
    return ", ".join(str(c) for c in counts)


def spec_overview(spec: dict) -> pd.DataFrame:
    """The spec's top-level keys, one line each (columns key, value)."""
    rows = [(str(k), _spec_value(v)) for k, v in spec.items()]
    return pd.DataFrame(rows, columns=["key", "value"])
