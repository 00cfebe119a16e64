"""The seeded, stratified draw of (stock, decision day) pairs: time windows x boards.

Eligible pairs: the stock is in the universe on T and listed on each of the `lookback`
days before T, and T leaves `warmup` days of history. The decision days are split into
equal contiguous windows; each (window, board) stratum gets an even share of N. A short
stratum gives what it has and the shortfall is filled round-robin from strata with
spare pairs, so the draw is deterministic and the header says where it was short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tradebench.data.dataset import Dataset
from tradebench.view import MarketView


@dataclass(frozen=True)
class Draw:
    """One drawn pair: decision-day position `pos`, panel column `col`, its stratum."""

    pos: int
    col: int
    window: int
    board: str


@dataclass(frozen=True)
class Allocation:
    """Per-stratum quotas (even shares of N) and counts actually drawn."""

    quotas: tuple[int, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True)
class DrawResult:
    """The draws (round-robin over strata, so any prefix is near-stratified), the
    allocation and each window's decision-day range."""

    draws: tuple[Draw, ...]
    strata: tuple[tuple[int, str], ...]
    available: tuple[int, ...]
    allocation: Allocation
    windows: tuple[tuple[int, int], ...]


def allocate(n: int, capacity: Sequence[int]) -> Allocation:
    """Split `n` evenly over strata, capped by capacity; shortfalls go round-robin.

    Quotas are `n // k`, with the remainder going to the first strata. Strata that cannot
    meet their quota give all they have; the missing count is handed out one at a time,
    in stratum order, to strata with spare capacity. The total is `min(n, sum(capacity))`.
    """
    k = len(capacity)
    if k == 0:
        return Allocation((), ())
    quotas = [n // k + (i < n % k) for i in range(k)]
    counts = [min(q, c) for q, c in zip(quotas, capacity, strict=True)]
    short = n - sum(counts)
    while short > 0 and any(c < cap for c, cap in zip(counts, capacity, strict=True)):
        for i in range(k):
            if short and counts[i] < capacity[i]:
                counts[i] += 1
                short -= 1
    return Allocation(tuple(quotas), tuple(counts))


def eligible_pairs(ds: Dataset, lookback: int, warmup: int) -> np.ndarray:
    """(D, N) bool: in the universe on T and listed on each of the `lookback` days before T."""
    panel = ds.panel
    n_days = len(panel.dates)
    listed = np.asarray(panel.listed, dtype=np.int64)
    cum = np.vstack([np.zeros((1, listed.shape[1]), dtype=np.int64), np.cumsum(listed, axis=0)])
    out = np.zeros((n_days, len(panel.symbols)), dtype=bool)
    for pos in range(max(warmup, lookback, 1), n_days):
        recent = cum[pos] - cum[pos - lookback] == lookback
        out[pos] = recent & MarketView(ds, panel.dates[pos]).member_mask()
    return out


def spread_order(cols: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A seeded order of candidates that visits every distinct stock before repeating one."""
    perm = rng.permutation(len(cols))
    seen: dict[int, int] = {}
    rank = np.empty(len(perm), dtype=np.int64)
    for i, c in enumerate(cols[perm].tolist()):
        rank[i] = seen.get(c, 0)
        seen[c] = rank[i] + 1
    return perm[np.lexsort((np.arange(len(perm)), rank))]


def draw_pairs(
    ds: Dataset,
    n: int,
    seed: int,
    boards: Sequence[str],
    n_windows: int = 5,
    lookback: int = 10,
    warmup: int = 61,
) -> DrawResult:
    """Draw `n` (stock, decision day) pairs stratified over windows x boards, seeded."""
    panel = ds.panel
    ok = eligible_pairs(ds, lookback, warmup)
    days = np.flatnonzero(ok.any(axis=1))
    if days.size == 0:
        return DrawResult((), (), (), Allocation((), ()), ())
    chunks = [c for c in np.array_split(np.arange(days[0], len(panel.dates)), n_windows) if c.size]
    windows = tuple((int(c[0]), int(c[-1])) for c in chunks)
    strata, candidates = [], []
    for w, (lo, hi) in enumerate(windows):
        for b, board in enumerate(boards):
            sub = ok[lo : hi + 1] & (panel.boards == board)[None, :]
            pos, col = np.nonzero(sub)
            order = spread_order(col, np.random.default_rng([seed, w, b]))
            candidates.append((pos[order] + lo, col[order]))
            strata.append((w, board))
    allocation = allocate(n, [len(p) for p, _ in candidates])
    ranked = [
        (rank, i, Draw(int(p), int(c), w, board))
        for i, ((w, board), (pos, col), k) in enumerate(
            zip(strata, candidates, allocation.counts, strict=True)
        )
        for rank, (p, c) in enumerate(zip(pos[:k], col[:k], strict=True))
    ]
    draws = [d for _, _, d in sorted(ranked, key=lambda r: (r[0], r[1]))]
    available = tuple(len(p) for p, _ in candidates)
    return DrawResult(tuple(draws), tuple(strata), available, allocation, windows)
