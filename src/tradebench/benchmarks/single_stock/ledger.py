"""The settled ledger of a single-stock episode: pure functions of actions and prices.

Conventions (see `docs/single_stock.md`):

* Decision i is taken at day i's close. `buy` sets the position to +1, `sell` to -1 (a
  short is allowed from flat), `hold` keeps it; the episode starts flat (0).
* Position p_i is held from day i's close to day i+1's close and earns
  ``e_i = p_i * ln(P[i+1] / P[i])`` on adjusted closes.
* Wealth after step i is ``W_i = exp(e_0 + ... + e_i)`` with ``W_{-1} = 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from tradebench.errors import DataError

Action = Literal["buy", "sell", "hold"]
ACTIONS: tuple[Action, ...] = ("buy", "sell", "hold")
_TARGET = {"buy": 1, "sell": -1}


def next_position(position: int, action: str) -> int:
    """The position after `action` (`buy` -> +1, `sell` -> -1, `hold` keeps `position`).

    Raises:
        DataError: `action` is not buy, sell or hold.
    """
    if action == "hold":
        return position
    if action not in _TARGET:
        raise DataError(f"unknown action {action!r}; actions are buy, sell, hold")
    return _TARGET[action]


def positions_from_actions(actions: Sequence[str], start: int = 0) -> np.ndarray:
    """Position held after each action, starting from `start` (flat by default)."""
    out = np.empty(len(actions), dtype=np.int64)
    position = start
    for i, action in enumerate(actions):
        position = next_position(position, action)
        out[i] = position
    return out


def log_returns(prices: ArrayLike, next_prices: ArrayLike) -> np.ndarray:
    """``ln(next_prices / prices)`` elementwise.

    Raises:
        DataError: Lengths differ, or a price is missing or not positive.
    """
    p = np.asarray(prices, dtype=np.float64)
    q = np.asarray(next_prices, dtype=np.float64)
    if p.shape != q.shape or p.ndim != 1:
        raise DataError(f"prices and next prices must be aligned 1-D, got {p.shape}, {q.shape}")
    if not (np.isfinite(p).all() and np.isfinite(q).all() and (p > 0).all() and (q > 0).all()):
        raise DataError("settlement prices must be finite and positive; check the dataset")
    return np.log(q / p)


@dataclass(frozen=True)
class Ledger:
    """Per-step settled quantities (read-only arrays, one entry per decision)."""

    positions: np.ndarray
    """Position held after each decision (-1, 0, +1)."""
    asset_log_returns: np.ndarray
    """``ln(P[i+1] / P[i])`` of the asset over each holding period."""
    earned: np.ndarray
    """``positions * asset_log_returns``: the strategy's log return per step."""
    wealth: np.ndarray
    """``exp(cumsum(earned))``: wealth after each step, starting from 1."""


def _frozen(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)
    return values


def settle(actions: Sequence[str], prices: ArrayLike, next_prices: ArrayLike) -> Ledger:
    """Settle a sequence of actions on (price at decision, price one day later) pairs."""
    asset = log_returns(prices, next_prices)
    if len(actions) != len(asset):
        raise DataError(f"{len(actions)} actions for {len(asset)} price pairs")
    positions = positions_from_actions(actions)
    earned = positions * asset
    return Ledger(
        positions=_frozen(positions),
        asset_log_returns=_frozen(asset),
        earned=_frozen(earned),
        wealth=_frozen(np.exp(np.cumsum(earned))),
    )
