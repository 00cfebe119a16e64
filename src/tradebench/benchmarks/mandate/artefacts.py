"""The mandate artefacts of one episode, as pure functions of its simulations.

- Cost-sensitivity curve (`cost_curve.parquet`): the episode's recorded target weights
  re-executed through the broker at each half-spread level (commission 0), one row per
  level: `cost_bps, total_return, final_nav, spread_paid, turnover`.
- Constraint adherence (`adherence.parquet`): per rebalance and constraint (and subject),
  the bound, the proposed and the projected value, and whether it was binding at the
  projection or broken by the proposal; `adherence_summary` counts how often each binds.
- Robustness: per-name P&L (`pnl_by_name.parquet`, the episode and its same-pool
  equal-weight reference), the leave-one-name-out spread (`loo_spread.parquet`: episode
  minus reference total return with that name's P&L removed from both), and a seeded
  bootstrap over days of the summed daily return spread (`spread_bootstrap.parquet`), and
  the same for the summed daily return itself (the net-return interval of the swap table).
- Held-book drift (`drift.parquet`): per day, the book held at the close (marked weights)
  checked against the mandate (`risk.violations`, no turnover), beside the projection's
  own check of its targets on rebalance days.
- Stress (`stress_blank_top.parquet`): the episode's targets and the equal-weight
  reference's re-executed with the name of largest P&L contribution blanked (its weight
  left in cash).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tradebench.risk import RiskConstraints, violations
from tradebench.runs.broker.engine import BacktestResult

ADHERENCE_COLUMNS = [
    "step",
    "date",
    "constraint",
    "subject",
    "bound",
    "proposed",
    "projected",
    "binding",
    "violated",
]


def spread_paid(orders: pd.DataFrame, half_spread_bps: float) -> float:
    """Value given up to the half-spread: per fill, shares x |fill price - open|."""
    if orders.empty or half_spread_bps == 0:
        return 0.0
    h = half_spread_bps / 1e4
    filled = orders[orders["filled_shares"] > 0]
    price = filled["fill_price"].to_numpy(float)
    buy = filled["side"].to_numpy() == "BUY"
    opened = np.where(buy, price / (1 + h), price / (1 - h))
    return float(np.sum(filled["filled_shares"].to_numpy(float) * np.abs(price - opened)))


def curve_row(result: BacktestResult, cost_bps: float) -> dict[str, float]:
    """One point of the cost curve from a re-execution at `cost_bps`."""
    nav = float(result.steps["nav"].iloc[-1])
    return {
        "cost_bps": float(cost_bps),
        "total_return": nav / result.initial_cash - 1,
        "final_nav": nav,
        "spread_paid": spread_paid(result.orders, cost_bps),
        "turnover": float(result.steps["turnover"].sum()),
    }


def adherence_table(infos: Sequence[dict[str, Any]], dates: Sequence[Any]) -> pd.DataFrame:
    """Every binding or broken constraint of every rebalance (`ADHERENCE_COLUMNS`)."""
    rows: dict[tuple[int, str, str | None], dict[str, Any]] = {}
    for step, (info, day) in enumerate(zip(infos, dates, strict=True)):
        for flag in ("binding", "violated"):
            for check in info.get(flag) or []:
                key = (step, check["constraint"], check["subject"])
                row = rows.setdefault(
                    key,
                    {
                        "step": step,
                        "date": pd.Timestamp(day),
                        "constraint": check["constraint"],
                        "subject": check["subject"],
                        "bound": float(check["bound"]),
                        "proposed": float(check["proposed"]),
                        "projected": float(check["projected"]),
                        "binding": False,
                        "violated": False,
                    },
                )
                row[flag] = True
    frame = pd.DataFrame(list(rows.values()), columns=ADHERENCE_COLUMNS)
    frame["date"] = pd.to_datetime(frame["date"]).astype("datetime64[ns]")
    return frame.astype({"binding": bool, "violated": bool})


def adherence_summary(table: pd.DataFrame, rebalances: int) -> pd.DataFrame:
    """Per constraint: rebalances where it bound, where the proposal broke it, their rates
    over `rebalances`, and the mean |proposed - projected|."""
    columns = ["constraint", "steps_binding", "steps_violated", "binding_rate", "violated_rate"]
    if table.empty or rebalances == 0:
        return pd.DataFrame(columns=[*columns, "mean_gap"])
    g = table.groupby("constraint", sort=True)
    out = pd.DataFrame(
        {
            "steps_binding": g.apply(lambda f: f.loc[f["binding"], "step"].nunique()),
            "steps_violated": g.apply(lambda f: f.loc[f["violated"], "step"].nunique()),
            "mean_gap": g.apply(lambda f: float((f["proposed"] - f["projected"]).abs().mean())),
        }
    )
    out["binding_rate"] = out["steps_binding"] / rebalances
    out["violated_rate"] = out["steps_violated"] / rebalances
    return out.reset_index()[[*columns, "mean_gap"]]


def daily_pnl_by_name(result: BacktestResult) -> pd.DataFrame:
    """Date x name P&L: change in the position's marked value plus the trade cash flows
    (fills net of costs). Sums to NAV change when nothing is distributed."""
    dates = pd.DatetimeIndex(pd.to_datetime(result.steps["date"]))
    pos = result.positions
    value = (
        (pos.assign(value=pos["shares"] * pos["close"]))
        .pivot_table(index="date", columns="symbol", values="value", aggfunc="sum")
        .reindex(dates)
        .fillna(0.0)
    )
    o = result.orders[result.orders["filled_shares"] > 0]
    gross = o["filled_shares"] * o["fill_price"]
    flow = np.where(o["side"] == "SELL", gross, -gross) - o["cost"]
    flows = (
        pd.DataFrame({"date": pd.to_datetime(o["date"]), "symbol": o["symbol"], "flow": flow})
        .pivot_table(index="date", columns="symbol", values="flow", aggfunc="sum")
        .reindex(dates)
        .fillna(0.0)
    )
    names = sorted(set(value.columns) | set(flows.columns))
    value = value.reindex(columns=names, fill_value=0.0)
    flows = flows.reindex(columns=names, fill_value=0.0)
    return value.diff().fillna(value) + flows


def daily_returns(result: BacktestResult) -> np.ndarray:
    """Daily NAV returns, the first against the initial cash."""
    nav = result.steps["nav"].to_numpy(float)
    prev = np.concatenate([[result.initial_cash], nav[:-1]])
    return nav / prev - 1


def pnl_by_name(
    episode: BacktestResult, reference: BacktestResult, pool: Sequence[str]
) -> pd.DataFrame:
    """Per pool name: P&L and contribution (P&L / initial cash) of the episode and of the
    equal-weight reference."""
    mine = daily_pnl_by_name(episode).sum().reindex(list(pool), fill_value=0.0)
    ref = daily_pnl_by_name(reference).sum().reindex(list(pool), fill_value=0.0)
    return pd.DataFrame(
        {
            "symbol": list(pool),
            "pnl": mine.to_numpy(),
            "contribution": mine.to_numpy() / episode.initial_cash,
            "ew_pnl": ref.to_numpy(),
            "ew_contribution": ref.to_numpy() / reference.initial_cash,
        }
    )


def loo_spread(
    by_name: pd.DataFrame, episode: BacktestResult, reference: BacktestResult
) -> pd.DataFrame:
    """Episode minus reference total return, whole and with each name's contribution
    removed from both (`left_out` null for the whole spread)."""
    mine = float(episode.steps["nav"].iloc[-1]) / episode.initial_cash - 1
    ref = float(reference.steps["nav"].iloc[-1]) / reference.initial_cash - 1
    rows = [{"left_out": None, "spread": mine - ref}]
    for r in by_name.itertuples(index=False):
        rows.append(
            {"left_out": r.symbol, "spread": (mine - r.contribution) - (ref - r.ew_contribution)}
        )
    return pd.DataFrame(rows, columns=["left_out", "spread"])


def _bootstrap_row(values: np.ndarray, statistic: str, samples: int, seed: int) -> dict:
    n = len(values)
    rng = np.random.default_rng(seed)
    sums = values[rng.integers(0, n, size=(samples, n))].sum(axis=1) if n else np.array([])
    lo, hi = np.quantile(sums, [0.025, 0.975]) if n else (np.nan, np.nan)
    return {
        "statistic": statistic,
        "estimate": float(values.sum()),
        "lo": float(lo),
        "hi": float(hi),
        "n_days": n,
        "samples": samples,
        "seed": seed,
    }


def bootstrap_spread(
    episode: BacktestResult, reference: BacktestResult, samples: int, seed: int
) -> pd.DataFrame:
    """Sum over days of the daily return spread (row `sum_daily_spread`) and of the daily
    return (`sum_daily_return`), each with a 95% percentile interval from `samples`
    resamplings of the days (with replacement, `numpy` seeded by `seed`)."""
    mine = daily_returns(episode)
    return pd.DataFrame(
        [
            _bootstrap_row(mine - daily_returns(reference), "sum_daily_spread", samples, seed),
            _bootstrap_row(mine, "sum_daily_return", samples, seed),
        ]
    )


DRIFT_COLUMNS = [
    "step",
    "date",
    "rebalance",
    "drift_rebalance",
    "cash",
    "largest",
    "breaches",
    "max_excess",
    "worst",
    "projection_breaches",
]


def held_weights(result: BacktestResult) -> pd.DataFrame:
    """Date x name weights of the book held at each close (marked value / NAV)."""
    dates = pd.DatetimeIndex(pd.to_datetime(result.steps["date"]))
    pos = result.positions
    value = (
        pos.assign(value=pos["shares"] * pos["close"])
        .pivot_table(index="date", columns="symbol", values="value", aggfunc="sum")
        .reindex(dates)
        .fillna(0.0)
    )
    nav = result.steps["nav"].to_numpy(float)
    return value.div(nav, axis=0)


def _breaches(
    weights: dict[str, float], c: RiskConstraints, sectors: dict[str, str], tolerance: float
) -> tuple[int, float, str]:
    found = violations(weights, c, sectors=sectors or None, tol=0.0)
    excess = [(abs(v.value - v.bound), f"{v.constraint} {v.subject or ''}".strip()) for v in found]
    worst = max(excess, default=(0.0, ""))
    return sum(e > tolerance for e, _ in excess), float(worst[0]), worst[1]


def drift_table(
    result: BacktestResult,
    infos: Sequence[dict[str, Any]],
    constraints: RiskConstraints,
    sectors: dict[str, str],
    pool: Sequence[str],
    tolerance: float,
) -> pd.DataFrame:
    """Per day: the held book's adherence (`breaches` beyond `tolerance`, the largest
    excess over a bound and which) beside, on rebalance days, the projected targets' own
    breaches (`projection_breaches`, beyond `tolerance` too)."""
    held = held_weights(result).reindex(columns=list(pool), fill_value=0.0)
    rows = []
    for step, (day, info) in enumerate(zip(held.index, infos, strict=True)):
        w = {n: float(x) for n, x in held.loc[day].items()}
        n, excess, worst = _breaches(w, constraints, sectors, tolerance)
        projected = info.get("projected")
        rows.append(
            {
                "step": step,
                "date": day,
                "rebalance": bool(info.get("rebalance")),
                "drift_rebalance": bool(info.get("drift_rebalance")),
                "cash": 1.0 - sum(w.values()),
                "largest": max(w.values(), default=0.0),
                "breaches": n,
                "max_excess": excess,
                "worst": worst,
                "projection_breaches": (
                    _breaches(dict(projected), constraints, sectors, tolerance)[0]
                    if projected is not None
                    else None
                ),
            }
        )
    frame = pd.DataFrame(rows, columns=DRIFT_COLUMNS)
    frame["date"] = pd.to_datetime(frame["date"]).astype("datetime64[ns]")
    return frame.astype({"projection_breaches": "Int64"})


def blank_targets(
    targets: Sequence[dict[str, float] | None], name: str
) -> list[dict[str, float] | None]:
    """`targets` with `name`'s weight left in cash (holds stay holds)."""
    return [None if t is None else {k: w for k, w in t.items() if k != name} for t in targets]
