"""Return attribution of one portfolio against the daily factor model: pure functions.

Each day t, with the weights held at t-1's close (`w_i`, a share of NAV):

    Common    = f0_t x sum_i w_i                       (the market as a whole)
    Style     = sum_k (sum_i w_i x_i,k,t-1) x lambda_k,t
    Selection = sum_i w_i e_i,t                        (stock-specific residuals)
    Trading   = NAV return - sum_i w_i r_i,t           (costs, open-price fills, ...)

The first three sum exactly to the holdings return sum_i w_i r_i,t, so the four sum to
the realised NAV return. Cumulative contributions are arithmetic sums and Carino-linked
(they then sum to the compound total return). Definitions: `docs/attribution.md`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tradebench.errors import DataError
from tradebench.metrics.factor_model import FactorModel

COMPONENTS = ("common", "style", "selection", "trading")
"""The four daily components; they sum to `nav_return`."""
DIAGNOSTICS = ("corporate_actions", "costs")
"""Parts of `trading` shown for information (not extra components)."""
ZERO_RETURN = 1e-12
"""|return| below which Carino's ln(1 + r) / r is taken at its limit, 1."""

__all__ = [
    "COMPONENTS",
    "DIAGNOSTICS",
    "attribution_summary",
    "carino_link",
    "decompose",
    "episode_rows",
    "nav_returns",
    "pre_return_weights",
]


def episode_rows(model: FactorModel, dates: pd.Series) -> np.ndarray:
    """Row of each episode day in the model's calendar.

    Raises:
        DataError: a day is outside the model's window.
    """
    day = pd.to_datetime(dates).to_numpy().astype("datetime64[D]")
    rows = np.searchsorted(model.dates, day)
    bad = (rows >= len(model.dates)) | (model.dates[np.minimum(rows, len(model.dates) - 1)] != day)
    if bad.any():
        raise DataError(
            f"episode day {day[bad][0]} is not in the factor model's window "
            f"{model.dates[0]} .. {model.dates[-1]}; attribute with the episode's own window"
        )
    return rows


def nav_returns(nav: pd.Series, initial_cash: float) -> np.ndarray:
    """Daily NAV returns of a step table, the first against the start capital."""
    values = pd.to_numeric(nav, errors="coerce").to_numpy(dtype=np.float64)
    previous = np.concatenate([[initial_cash], values[:-1]])
    return values / previous - 1.0


def pre_return_weights(
    positions: pd.DataFrame, dates: pd.Series, columns: dict[str, int], n_symbols: int
) -> np.ndarray:
    """(D, N) weights held at the close before each episode day (none before the first).

    `positions` is the engine's table (`date, symbol, weight` at each close).

    Raises:
        DataError: a held symbol is not in the dataset.
    """
    day = pd.to_datetime(dates).to_numpy().astype("datetime64[D]")
    out = np.zeros((day.size, n_symbols))
    if positions.empty:
        return out
    held = pd.to_datetime(positions["date"]).to_numpy().astype("datetime64[D]")
    step = np.searchsorted(day, held) + 1  # held at this close -> earns the next day
    cols = np.array([columns.get(str(s), -1) for s in positions["symbol"]], dtype=np.int64)
    if (cols < 0).any():
        missing = positions["symbol"].to_numpy()[cols < 0][0]
        raise DataError(f"held symbol {missing!r} is not in the dataset; attribute with its data")
    ok = step < day.size
    np.add.at(out, (step[ok], cols[ok]), positions["weight"].to_numpy(dtype=np.float64)[ok])
    return out


def decompose(
    model: FactorModel,
    rows: np.ndarray,
    weights: np.ndarray,
    nav_return: np.ndarray,
    costs: np.ndarray | None = None,
    distributions: np.ndarray | None = None,
) -> pd.DataFrame:
    """Daily components, per-factor style contributions and exposures, indexed by `date`.

    Args:
        model: the window's factor model; rows: each episode day's model row.
        weights: (D, N) pre-return weights; nav_return: (D,) realised NAV returns.
        costs: (D,) trading costs as a share of the previous NAV (a diagnostic).
        distributions: (D,) dividends and share distributions the engine credited, as a
            share of the previous NAV; part of the corporate-action diagnostic.
    """
    x = np.nan_to_num(model.exposures[:, rows])
    ret = np.nan_to_num(model.returns[rows])
    intercept = np.nan_to_num(model.fit.intercept[rows])
    lambdas = np.nan_to_num(model.fit.lambdas[rows])
    invested = weights.sum(axis=1)
    holdings = (weights * ret).sum(axis=1)
    exposure = np.einsum("kdn,dn->dk", x, weights)
    style_k = exposure * lambdas
    frame = pd.DataFrame(
        {
            "nav_return": nav_return,
            "holdings_return": holdings,
            "invested": invested,
            "common": intercept * invested,
            "style": style_k.sum(axis=1),
            "selection": (weights * model.residuals[rows]).sum(axis=1),
            "trading": nav_return - holdings,
            "corporate_actions": (weights * (model.mark_returns[rows] - ret)).sum(axis=1)
            + (0.0 if distributions is None else np.asarray(distributions, float)),
            "costs": np.zeros(len(rows)) if costs is None else -np.asarray(costs, float),
        },
        index=pd.DatetimeIndex(model.dates[rows], name="date"),
    )
    for k, name in enumerate(model.factors):
        frame[f"style_{name}"] = style_k[:, k]
    for k, name in enumerate(model.factors):
        frame[f"exposure_{name}"] = exposure[:, k]
    return frame


def _carino(r: np.ndarray) -> np.ndarray:
    """ln(1 + r) / r, 1 at r = 0 (NaN at r <= -1)."""
    r = np.asarray(r, dtype=np.float64)
    small = np.abs(r) < ZERO_RETURN
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.log1p(r) / np.where(small, 1.0, r)
    return np.where(small, 1.0, np.where(r > -1.0, out, np.nan))


def carino_link(daily: pd.DataFrame, columns: list[str]) -> pd.Series:
    """Carino-linked cumulative contributions of `columns` (daily shares of NAV).

    Each day's contribution is scaled by k_t / K with k_t = ln(1 + r_t) / r_t of the day's
    NAV return and K the same of the compound total, so components that sum to r_t each
    day sum to the compound return. NaN when the compound return is <= -100%.
    """
    r = daily["nav_return"].to_numpy(dtype=np.float64)
    total = float(np.prod(1.0 + r) - 1.0) if r.size else 0.0
    scale = _carino(r) / _carino(np.array([total]))[0]
    return (daily[columns].mul(scale, axis=0)).sum()


def attribution_summary(daily: pd.DataFrame, factors: tuple[str, ...]) -> dict[str, float]:
    """One episode's cumulative attribution, average exposures and reconciliation error.

    Keys: `total_return`; the components and `style_<factor>` Carino-linked, with `_sum`
    twins (arithmetic); `exposure_<factor>`: the mean over invested days of the invested
    book's exposure (sum_i w_i x_i / sum_i w_i); `invested_days`, `mean_invested`,
    `reconciliation_error` (max |sum of components - NAV return|).
    """
    r = daily["nav_return"].to_numpy(dtype=np.float64)
    style_cols = [f"style_{f}" for f in factors]
    linked = carino_link(daily, [*COMPONENTS, *style_cols])
    sums = daily[[*COMPONENTS, *DIAGNOSTICS]].sum()
    invested = daily["invested"].to_numpy(dtype=np.float64)
    on = invested > 1e-9
    out: dict[str, float] = {
        "n_days": float(len(daily)),
        "total_return": float(np.prod(1.0 + r) - 1.0) if r.size else np.nan,
        "invested_days": float(on.sum()),
        "mean_invested": float(invested.mean()) if r.size else np.nan,
        "reconciliation_error": float(
            np.abs(daily[list(COMPONENTS)].sum(axis=1).to_numpy() - r).max(initial=0.0)
        ),
    }
    out |= {name: float(linked[name]) for name in [*COMPONENTS, *style_cols]}
    out |= {f"{name}_sum": float(sums[name]) for name in [*COMPONENTS, *DIAGNOSTICS]}
    for f in factors:
        book = daily[f"exposure_{f}"].to_numpy(dtype=np.float64)[on] / invested[on]
        out[f"exposure_{f}"] = float(book.mean()) if book.size else np.nan
    return out
