"""A synthetic market whose returns follow a planted factor model on the style exposures.

Warm-up days are a plain random walk (the factors need a year of history). On each
evaluation day t the generator computes the nine style exposures from the data before t
with the library's own functions, then draws

    r_i,t = f0_t + sum_k x_i,k,t-1 * lambda_k,t + alpha_i + eps_i,t

with known intercepts, factor returns and stock alphas (mean zero across names), so the
attribution regression has something exact to recover. Every name is an index member and
trades every day; amount = volume x close is reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tradebench.data.assemble import assemble_dataset
from tradebench.features.style import LOOKBACK, STYLE_FACTORS, StyleInputs, style_exposures

N_NAMES = 200
WARMUP = 300
EVAL_DAYS = 120
ALPHA = 0.002
ALPHA_NAMES = 12
LAMBDA_VOL = 0.004
NOISE_VOL = 0.01
OVERNIGHT = 0.02
"""Open-gap volatility, independent of the day's return (keeps intraday momentum apart
from short-term reversal, as on real markets)."""


@dataclass(frozen=True)
class PlantedMarket:
    """The dataset folder and the truth it was drawn from."""

    path: Path
    eval_dates: pd.DatetimeIndex
    lambdas: np.ndarray
    """(EVAL_DAYS, K) planted factor returns, factors in `STYLE_FACTORS` order."""
    alpha: np.ndarray
    """(N,) planted daily stock alphas."""
    symbols: list[str]


def _exposures(close: np.ndarray, open_: np.ndarray, volume: np.ndarray, t: int) -> np.ndarray:
    """(K, N) exposures for day t from rows < t, through the library's pipeline."""
    rows = slice(t - LOOKBACK, t)
    inputs = StyleInputs(
        adj_open=open_[rows],
        adj_close=close[rows],
        volume=volume[rows],
        amount=volume[rows] * close[rows],
        tradable=np.ones(close[rows].shape, dtype=bool),
        amount_source="reported",
    )
    universe = np.ones(close[rows].shape, dtype=bool)
    return style_exposures(inputs, universe).values[:, -1]


def _bars(close, open_, volume, dates, symbols) -> pd.DataFrame:
    hi = np.maximum(open_, close) * 1.004
    lo = np.minimum(open_, close) * 0.996
    n_days, n = close.shape
    return pd.DataFrame(
        {
            "date": np.repeat(dates, n),
            "symbol": np.tile(symbols, n_days),
            "open": open_.ravel(),
            "high": hi.ravel(),
            "low": lo.ravel(),
            "close": close.ravel(),
            "adj_factor": 1.0,
            "volume": volume.ravel(),
            "amount": (volume * close).ravel(),
        }
    )


def build_planted_market(out: Path, seed: int = 1337) -> PlantedMarket:
    """Generate the market day by day and write it as a dataset folder."""
    rng = np.random.RandomState(seed)
    n_days = WARMUP + EVAL_DAYS
    dates = pd.bdate_range("2020-01-06", periods=n_days)
    symbols = [f"SH60{i:04d}" for i in range(N_NAMES)]
    alpha = np.zeros(N_NAMES)
    alpha[:ALPHA_NAMES], alpha[ALPHA_NAMES : 2 * ALPHA_NAMES] = ALPHA, -ALPHA
    close = np.empty((n_days, N_NAMES))
    open_ = np.empty((n_days, N_NAMES))
    volume = np.exp(rng.normal(14, 0.5, (n_days, N_NAMES))) * np.exp(rng.normal(0, 0.6, N_NAMES))
    prev = np.exp(rng.normal(3, 0.5, N_NAMES))
    lambdas = rng.normal(0, LAMBDA_VOL, (EVAL_DAYS, len(STYLE_FACTORS)))
    for t in range(n_days):
        if t < WARMUP:
            ret = rng.normal(0.0003, 0.02, N_NAMES) * np.exp(rng.normal(0, 0.3, N_NAMES))
        else:
            x = np.nan_to_num(_exposures(close, open_, volume, t))
            f0 = rng.normal(0, 0.01)
            ret = f0 + lambdas[t - WARMUP] @ x + alpha + rng.normal(0, NOISE_VOL, N_NAMES)
        overnight = rng.normal(0, OVERNIGHT, N_NAMES)
        open_[t] = prev * np.exp(overnight)
        close[t] = prev * (1.0 + ret)
        prev = close[t]
    membership = pd.DataFrame(
        {"symbol": symbols, "start": dates[0], "end": pd.NaT, "name": symbols}
    )
    assemble_dataset(
        out,
        _bars(close, open_, volume, dates, symbols),
        market="cn",
        name="planted",
        price_basis="raw_with_factor",
        sources=["tests/attribution/planted.py"],
        membership=membership[["symbol", "start", "end"]],
    )
    return PlantedMarket(out, dates[WARMUP:], lambdas, alpha, symbols)
