"""The plan's power section: minimum detectable differences at the spec's size, and the
days and seeds a target difference needs (formulas: `metrics.power`, docs/statistics.md).

The spread comes from the stated assumptions, or from a previous run folder
(`PlanAssumptions.previous`): the median sd of the daily return difference and the median
correlation of every two agents that ran the same window and seed over the same days, and
the pooled sd across seeds of the total return of every agent, mode and mask that ran
several seeds that differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from tradebench.leaderboard.data import board_episodes
from tradebench.metrics.power import (
    days_for_return,
    days_for_sharpe,
    mde_daily_return,
    mde_seed_mean,
    mde_sharpe,
    seeds_needed,
)
from tradebench.plan.core import PLAN_SECTIONS, PlanContext, PlanSection

__all__ = ["Spread", "power_section", "spread_from_run"]


@dataclass(frozen=True)
class Spread:
    """Daily difference sd, correlation and seed sd, with where they came from."""

    daily_sd: float
    rho: float
    seed_sd: float | None
    source: str


def spread_from_run(run_dir: Path, fallback: Spread) -> Spread:
    """The spread measured in a previous run folder (module docstring); the fallback's
    values where the run cannot tell (one agent, or no seeds that differ).

    Raises:
        ConfigError: The folder is not a run folder with finished episodes.
    """
    episodes = board_episodes([run_dir])
    sds, rhos = [], []
    for _, group in episodes.groupby(["window_start", "window_end", "seed"], dropna=True):
        series = [r for r in group["returns"] if r is not None]
        for a, b in combinations(series, 2):
            if len(a) == len(b) and len(a) > 2 and np.std(a - b) > 0:
                sds.append(float(np.std(a - b, ddof=1)))
                if np.std(a) > 0 and np.std(b) > 0:
                    rhos.append(float(np.corrcoef(a, b)[0, 1]))
    variances = (
        episodes.groupby(["identity", "mode", "mask", "window_start", "window_end"])["value"]
        .var(ddof=1)
        .dropna()
    )
    variances = variances[variances > 0]
    return Spread(
        daily_sd=float(np.median(sds)) if sds else fallback.daily_sd,
        rho=float(np.median(rhos)) if rhos else fallback.rho,
        seed_sd=float(np.sqrt(variances.mean())) if len(variances) else fallback.seed_sd,
        source=f"measured in {run_dir} ({len(sds)} agent pairs, {len(variances)} seeded cells)",
    )


def _pct(x: float) -> str:
    return "undefined" if not np.isfinite(x) else f"{100 * x:.2f}%"


@PLAN_SECTIONS.register("power")
def power_section(context: PlanContext) -> PlanSection:
    """Minimum detectable effects at 80% power (or as stated) and the sample a target
    needs."""
    a = context.assumptions
    spread = Spread(a.daily_sd, a.rho, a.seed_sd, "stated")
    if a.previous is not None:
        spread = spread_from_run(a.previous, spread)
    level, power, days, seeds = a.alpha, a.power, context.days, context.seeds
    windows = len(context.window_days)
    rows = [
        ("windows x seeds", f"{windows} x {seeds}"),
        ("decision days per window", ", ".join(map(str, context.window_days)) or "none"),
        ("paired days (all windows)", str(days)),
        (
            "minimum detectable annual return difference (over days)",
            _pct(mde_daily_return(spread.daily_sd, days, level, power)),
        ),
        (
            "minimum detectable Sharpe difference, annualised (over days)",
            f"{mde_sharpe(days, spread.rho, level, power):.2f}" if days else "undefined",
        ),
    ]
    if spread.seed_sd is not None:
        pairs = seeds * windows
        rows.append(
            (
                "minimum detectable total-return difference per window (over seeds)",
                _pct(mde_seed_mean(spread.seed_sd * np.sqrt(2), pairs, level, power))
                + f" ({pairs} seed pairs)",
            )
        )
    rows += _needed(context, spread)
    notes = [
        f"Two-sided tests at level {level:g}, power {power:.0%}. Spread {spread.source}: "
        f"daily difference sd {spread.daily_sd:.4g}, daily correlation {spread.rho:.2f}"
        + (
            f", seed sd {spread.seed_sd:.4g}"
            if spread.seed_sd is not None
            else ", seed sd not stated"
        )
        + ".",
        "Days are weekdays from each window's start to its end (holidays not removed: an "
        "upper bound, so the true detectable effects are a little larger). Days are taken "
        "as independent; seeds as independent draws of the same agent (two agents' seeds "
        "differ by sqrt(2) seed sds).",
    ]
    return PlanSection("Power before the run", rows, notes)


def _needed(context: PlanContext, spread: Spread) -> list[tuple[str, str]]:
    """The days and seeds a stated target needs."""
    a = context.assumptions
    rows = []
    if a.target_return is not None:
        need = days_for_return(a.target_return, spread.daily_sd, a.alpha, a.power)
        rows.append((f"days needed for {_pct(a.target_return)} a year (over days)", str(need)))
        if spread.seed_sd is not None and context.window_days:
            per_window = a.target_return * float(np.mean(context.window_days)) / 252
            n = seeds_needed(per_window, spread.seed_sd * np.sqrt(2), a.alpha, a.power)
            windows = len(context.window_days)
            rows.append(
                (
                    f"seeds needed for {_pct(a.target_return)} a year (over seeds)",
                    f"{-(-n // windows)} per window ({n} seed pairs)",
                )
            )
    if a.target_sharpe is not None:
        need = days_for_sharpe(a.target_sharpe, spread.rho, a.alpha, a.power)
        rows.append((f"days needed for a Sharpe difference of {a.target_sharpe:g}", str(need)))
    return rows
