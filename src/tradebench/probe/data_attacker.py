"""The data attacker: match a masked snapshot against every real series in the database.

Anyone with the public price database can slide the snapshot's bars over every symbol's
history at every date and keep the closest window. The distance is a mean absolute
difference over the bars, on one signal:

- `levels`: log closes as shown (real levels in `raw` mode; rebased to 100 otherwise);
- `returns`: daily log returns of the closes shown (unchanged by rebasing);
- `volume`: log(1 + volume), which masking leaves as is;
- `combined`: `returns + volume`;
- `context`: the date alone, from `get_market_context`'s index returns (1, 5, 20 days)
  matched against the index series; it names no stock (ticker `unknown`), so its ticker
  and joint rates are zero by construction.

The price-level attack on the account a blinded agent reads (holdings, fills) is in
`level_attack`.

Candidates are restricted to the board the payload shows. The guess is the five closest
symbols (each at its best window), the date of the best window's last bar, and the
best symbol's sector. Fully vectorised: one (windows x symbols x bars) array per payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from tradebench.data.dataset import Dataset
from tradebench.probe.attempt import Attempt
from tradebench.probe.scoring import TOP_K
from tradebench.probe.types import GUESS_BOARDS, AttackGuess, Probe, Variant

SIGNALS: tuple[str, ...] = ("levels", "returns", "volume", "combined", "context")
INDEX_HORIZONS = (1, 5, 20)
"""Index-return horizons (days) of `get_market_context`."""
"""Signals the data attacker can match on."""


@dataclass(frozen=True)
class PriceDatabase:
    """The public database as the attacker holds it: raw closes and volumes, (D, N)."""

    symbols: np.ndarray
    dates: np.ndarray
    boards: np.ndarray
    sectors: np.ndarray
    log_close: np.ndarray
    log_volume: np.ndarray
    index_close: np.ndarray

    @classmethod
    def from_dataset(cls, ds: Dataset) -> PriceDatabase:
        """Raw closes and volumes of every symbol (NaN where not listed)."""
        panel = ds.panel
        listed = np.asarray(panel.listed, dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            close = np.where(listed, np.log(panel.fields["close"]), np.nan)
            volume = np.where(listed, np.log1p(panel.fields["volume"]), np.nan)
        inst = ds.instruments.set_index("symbol")["sector"]
        sectors = np.array([inst.get(s) for s in panel.symbols], dtype=object)
        index = np.asarray(panel.index["close"], dtype=np.float64)
        return cls(panel.symbols, panel.dates, panel.boards, sectors, close, volume, index)


@dataclass(frozen=True)
class Observed:
    """The snapshot's numbers: log closes, log volumes and the board shown."""

    log_close: np.ndarray
    log_volume: np.ndarray
    board: str | None


def observed(variant: Variant, last: int | None = None) -> Observed | None:
    """The (last `last`) bars of the variant's `get_stock_snapshot` result; None if < 2."""
    snap = next((c["result"] for c in variant.calls if c["tool"] == "get_stock_snapshot"), None)
    bars: list[dict[str, Any]] = (snap or {}).get("bars") or []
    bars = bars[-last:] if last else bars
    if len(bars) < 2:
        return None
    close = np.array([np.nan if b.get("close") is None else b["close"] for b in bars], float)
    volume = np.array([np.nan if b.get("volume") is None else b["volume"] for b in bars], float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return Observed(np.log(close), np.log1p(volume), (snap or {}).get("board"))


def _mean_abs(windows: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Mean |window - obs| over the last axis, skipping NaN in `obs`; inf on NaN windows."""
    valid = np.isfinite(obs)
    if not valid.any():
        return np.full(windows.shape[:-1], np.inf)
    diff = np.abs(windows[..., valid] - obs[valid]).mean(axis=-1)
    return np.where(np.isfinite(diff), diff, np.inf)


def distances(db: PriceDatabase, obs: Observed, cols: np.ndarray) -> dict[str, np.ndarray]:
    """(windows, candidates) distance per signal; window i covers dates[i : i + L]."""
    n_bars = len(obs.log_close)
    close = sliding_window_view(db.log_close[:, cols], n_bars, axis=0)
    volume = sliding_window_view(db.log_volume[:, cols], n_bars, axis=0)
    out = {
        "levels": _mean_abs(close, obs.log_close),
        "returns": _mean_abs(np.diff(close, axis=-1), np.diff(obs.log_close)),
        "volume": _mean_abs(volume, obs.log_volume),
    }
    out["combined"] = out["returns"] + out["volume"]
    return out


def guess_from(
    db: PriceDatabase, dist: np.ndarray, cols: np.ndarray, n_bars: int, board: str | None
) -> AttackGuess:
    """Top-5 closest symbols, the best window's last date, the best symbol's sector."""
    best_window = np.argmin(dist, axis=0)
    best = dist[best_window, np.arange(len(cols))]
    order = np.lexsort((db.symbols[cols].astype(str), best))[:TOP_K]
    top = cols[order[0]]
    day = pd.Timestamp(db.dates[best_window[order[0]] + n_bars - 1]).date()
    sector = db.sectors[top]
    shown = board if board in GUESS_BOARDS else str(db.boards[top])
    return AttackGuess(
        tickers=[str(db.symbols[c]) for c in cols[order]],
        date=day.isoformat(),
        sector=str(sector) if isinstance(sector, str) else "unknown",
        board=shown if shown in GUESS_BOARDS else "unknown",
    )


def label(signal: str, bars: int | None = None) -> str:
    """Attacker label of a signal (`data:returns`, or `data:returns@3` on the last 3 bars)."""
    return f"data:{signal}" + (f"@{bars}" if bars else "")


def context_date(db: PriceDatabase, variant: Variant) -> str | None:
    """The day whose index returns best match the payload's market context (ISO)."""
    ctx = next((c["result"] for c in variant.calls if c["tool"] == "get_market_context"), {})
    idx = db.index_close
    dist = np.zeros(len(idx))
    used = 0
    for n in INDEX_HORIZONS:
        shown = ctx.get(f"index_ret_{n}d")
        if shown is None:
            continue
        ret = np.full(len(idx), np.nan)
        ret[n:] = idx[n:] / idx[:-n] - 1
        dist += np.where(np.isfinite(ret), np.abs(ret - shown), np.inf)
        used += 1
    if not used or not np.isfinite(dist).any():
        return None
    return pd.Timestamp(db.dates[int(np.argmin(dist))]).date().isoformat()


def _context_attempt(db: PriceDatabase, variant: Variant, base: dict[str, Any]) -> Attempt:
    day = context_date(db, variant)
    if day is None:
        return Attempt(**base, attacker=label("context"), failure="no_index")
    obs = observed(variant)
    board = obs.board if obs is not None and obs.board in GUESS_BOARDS else "unknown"
    guess = AttackGuess(tickers=["unknown"], date=day, sector="unknown", board=board)
    return Attempt(**base, attacker=label("context"), guess=guess)


def _stock_attempts(
    db: PriceDatabase, variant: Variant, signals: list[str], bars: int | None, base: dict
) -> list[Attempt]:
    obs = observed(variant, bars)
    if obs is None or len(obs.log_close) > len(db.dates):
        return [Attempt(**base, attacker=label(s, bars), failure="no_bars") for s in signals]
    cols = np.flatnonzero(db.boards == obs.board) if obs.board else np.arange(len(db.symbols))
    if cols.size == 0:
        cols = np.arange(len(db.symbols))
    dist = distances(db, obs, cols)
    n_bars = len(obs.log_close)
    return [
        Attempt(
            **base,
            attacker=label(s, bars),
            guess=guess_from(db, dist[s], cols, n_bars, obs.board),
        )
        for s in signals
    ]


def attack_variant(
    db: PriceDatabase,
    probe: Probe,
    variant: Variant,
    signals: tuple[str, ...] = SIGNALS,
    bars: int | None = None,
) -> list[Attempt]:
    """One attempt per signal for one payload variant, on its last `bars` bars (all: None)."""
    base = {"probe_id": probe.probe_id, "level": variant.level, "price_mode": variant.price_mode}
    stock = [s for s in signals if s != "context"]
    out = _stock_attempts(db, variant, stock, bars, base) if stock else []
    if "context" in signals:
        out.append(_context_attempt(db, variant, base))
    return out


def attack_all(
    db: PriceDatabase,
    items: list[tuple[Probe, Variant]],
    signals: tuple[str, ...] = SIGNALS,
    bars: int | None = None,
) -> list[Attempt]:
    """Attack every (probe, variant) on every signal."""
    return [
        a for probe, variant in items for a in attack_variant(db, probe, variant, signals, bars)
    ]
