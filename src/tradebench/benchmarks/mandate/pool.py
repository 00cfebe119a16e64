"""Which names an episode may hold: a seeded pool of K point-in-time members.

The pool is drawn once per (window, K, seed) by the environment, before the first
decision: the index members at the window's first day (the dataset's membership table)
with a close on the day before it, names with visible evidence records at that instant
first (sorted), then a seeded draw from the other members. Sectors come from the
dataset's instruments table (for the shared US data: today's GICS sectors, applied to
the past: survivorship).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.view import DayLike, MarketView


def evidence_names(view: MarketView, candidates: Sequence[str]) -> list[str]:
    """Candidates named by at least one record visible at the view's decision instant."""
    named = {s for syms in view.records()["symbols"] for s in syms}
    return sorted(set(candidates) & named)


def draw_pool(
    dataset: Dataset, first_day: DayLike, size: int, seed: int, evidence_first: bool = True
) -> list[str]:
    """The pool of `size` names for a window starting on `first_day` (sorted).

    Raises:
        ConfigError: fewer than `size` members have a price before `first_day`.
    """
    view = MarketView(dataset, first_day)
    close = view.last("close")
    index_symbol = dataset.manifest.index_symbol
    members = sorted(
        s
        for s in view.members().tolist()
        if np.isfinite(close[view.column(s)]) and s != index_symbol
    )
    if len(members) < size:
        raise ConfigError(
            f"only {len(members)} members have a price before {first_day}; "
            f"lower the pool size {size}"
        )
    rng = np.random.default_rng([seed, size])
    first = evidence_names(view, members) if evidence_first else []
    if len(first) > size:
        first = sorted(rng.choice(first, size, replace=False).tolist())
    rest = sorted(set(members) - set(first))
    drawn = rng.choice(rest, size - len(first), replace=False).tolist() if size > len(first) else []
    return sorted([*first, *drawn])


def sector_map(dataset: Dataset, names: Sequence[str]) -> dict[str, str]:
    """Name -> sector from the dataset's instruments (names without one are left out)."""
    table = dataset.instruments
    if "sector" not in table:
        return {}
    known = dict(zip(table["symbol"].astype(str), table["sector"], strict=True))
    return {n: str(known[n]) for n in names if isinstance(known.get(n), str) and known[n]}
