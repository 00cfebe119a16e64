"""Which names an episode may hold: a pool of K point-in-time members, chosen once.

Candidates are the index members at the window's first decision day (the dataset's
membership table) with a close on the day before it, the index symbol excepted. The pool
is chosen once per (window, analyst set, K), and per seed for the random control, before
the first decision and kept for the episode:

- `analysts` (default): every analyst of the set scores every candidate through the view
  at the first decision instant; per name the weighted mean over analysts of `score x
  confidence` (`analysts.combined_scores`); the pool is the K highest (ties by name). The
  weights are uniform, or (`ic`) each analyst's mean daily Spearman rank IC between its
  `score x confidence` and the close-to-close return of the same day over the
  `ic_validation_days` trading days before the window (all known before T), floored at 0
  and normalised; all zero falls back to uniform (said in the record).
- `random` (the control): names with visible evidence records first (sorted), then a draw
  seeded by `(seed, K)` from the other candidates.

Sectors come from the dataset's instruments table (for the shared US data: today's GICS
sectors, applied to the past: survivorship). A name without one is its own sector
`unknown (<name>)` (`own`), or shares one `unknown` sector (`shared`), or fails the run
(`error`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.mandate.analysts import combined_scores
from tradebench.benchmarks.mandate.sources import AnalystCall, AnalystSource
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.view import DayLike, MarketView

POOL_VERSION = 1
UNKNOWN_SECTOR = "unknown"


class PoolChoice(BaseModel):
    """`RUN_DIR/pools/<window>_<set>_k<K>[_s<seed>].json`: how a pool was chosen."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = POOL_VERSION
    """Version of this record."""
    rule: str
    """`analysts` or `random`."""
    day: str
    """The window's first decision day (YYYY-MM-DD)."""
    size: int
    """K."""
    analyst_set: str
    """The analyst set that chose it (or whose captures the random pool feeds)."""
    names: list[str]
    """The pool, sorted."""
    candidates: int
    """How many candidates there were."""
    weighting: str | None = None
    """`uniform` or `ic` (analysts rule only)."""
    weights: dict[str, float] = {}
    """Analyst label -> weight in the aggregation (analysts rule only)."""
    ic: dict[str, float | None] = {}
    """Analyst label -> mean daily rank IC over the validation window (`ic` only)."""
    validation: list[str] = []
    """First and last day of the IC validation window (`ic` only)."""
    note: str = ""
    """What was decided when the rule could not apply as stated (e.g. all ICs <= 0)."""
    scores: dict[str, float] = {}
    """Aggregated score of the 2K best candidates (analysts rule only)."""
    analyst_calls: list[AnalystCall] = []
    """Model analysts' calls behind the choice."""


def candidates(dataset: Dataset, view: MarketView) -> list[str]:
    """Members at the view's day with a close the day before (the index excepted), sorted."""
    close = view.last("close")
    index_symbol = dataset.manifest.index_symbol
    return sorted(
        s
        for s in view.members().tolist()
        if np.isfinite(close[view.column(s)]) and s != index_symbol
    )


def _candidates(dataset: Dataset, view: MarketView, size: int, day: DayLike) -> list[str]:
    members = candidates(dataset, view)
    if len(members) < size:
        raise ConfigError(
            f"only {len(members)} members have a price before {day}; lower the pool size {size}"
        )
    return members


def evidence_names(view: MarketView, names: Sequence[str]) -> list[str]:
    """Names named by at least one record visible at the view's decision instant."""
    named = {s for syms in view.records()["symbols"] for s in syms}
    return sorted(set(names) & named)


def draw_pool(
    dataset: Dataset, first_day: DayLike, size: int, seed: int, evidence_first: bool = True
) -> list[str]:
    """The random control pool of `size` names for a window starting on `first_day`.

    Raises:
        ConfigError: fewer than `size` members have a price before `first_day`.
    """
    view = MarketView(dataset, first_day)
    members = _candidates(dataset, view, size, first_day)
    rng = np.random.default_rng([seed, size])
    first = evidence_names(view, members) if evidence_first else []
    if len(first) > size:
        first = sorted(rng.choice(first, size, replace=False).tolist())
    rest = sorted(set(members) - set(first))
    drawn = rng.choice(rest, size - len(first), replace=False).tolist() if size > len(first) else []
    return sorted([*first, *drawn])


def top_k(scores: dict[str, float], size: int) -> list[str]:
    """The `size` names with the highest score (ties by name), sorted."""
    ranked = sorted(scores, key=lambda n: (-scores[n], n))
    return sorted(ranked[:size])


def _rank_ic(score: np.ndarray, outcome: np.ndarray) -> float:
    ok = np.isfinite(score) & np.isfinite(outcome)
    if ok.sum() < 3:
        return float("nan")
    a = pd.Series(score[ok]).rank().to_numpy()
    b = pd.Series(outcome[ok]).rank().to_numpy()
    if a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


async def information_coefficients(
    dataset: Dataset,
    first_day: DayLike,
    names: Sequence[str],
    sources: Sequence[AnalystSource],
    days: int,
) -> tuple[dict[str, float | None], list[str], list[AnalystCall]]:
    """Per analyst label, the mean daily Spearman IC over the `days` trading days before
    `first_day`; the window's first and last day; the model calls made."""
    panel = dataset.panel
    at = MarketView(dataset, first_day)  # every outcome is a bar before the window
    span = list(range(max(1, at.t - days), at.t))
    cols = [at.column(n) for n in names]
    closes = at.window("adj_close", len(span) + 1)[:, cols]
    with np.errstate(invalid="ignore", divide="ignore"):
        outcomes = closes[1:] / closes[:-1] - 1
    per: dict[str, list[float]] = {s.label: [] for s in sources}
    calls: list[AnalystCall] = []
    for j, t in enumerate(span):
        view = MarketView(dataset, panel.dates[t])
        outcome = outcomes[j]
        for source in sources:
            out = await source.signals(view, names)
            calls += out.calls
            value = {s.symbol: s.score * s.confidence for s in out.signals}
            per[source.label].append(_rank_ic(np.array([value[n] for n in names]), outcome))
    ic = {k: (float(np.nanmean(v)) if np.isfinite(v).any() else None) for k, v in per.items()}
    window = [str(panel.dates[span[0]]), str(panel.dates[span[-1]])] if span else []
    return ic, window, calls


async def choose_pool(
    dataset: Dataset,
    first_day: DayLike,
    size: int,
    analyst_set: str,
    sources: Sequence[AnalystSource],
    weighting: str = "uniform",
    validation_days: int = 20,
) -> PoolChoice:
    """The analysts' aggregated top-`size` at `first_day` (see the module docstring)."""
    view = MarketView(dataset, first_day)
    names = _candidates(dataset, view, size, first_day)
    weights = {s.label: 1.0 for s in sources}
    ic: dict[str, float | None] = {}
    window: list[str] = []
    calls: list[AnalystCall] = []
    note = ""
    if weighting == "ic":
        ic, window, calls = await information_coefficients(
            dataset, first_day, names, sources, validation_days
        )
        floored = {k: max(0.0, v or 0.0) for k, v in ic.items()}
        total = sum(floored.values())
        if total > 0:
            weights = {k: v / total for k, v in floored.items()}
        else:
            note = "no analyst had a positive IC over the validation window: uniform weights"
    signals = []
    for source in sources:
        out = await source.signals(view, names)
        signals += out.signals
        calls += out.calls
    scores = combined_scores(signals, names, weights)
    best = sorted(scores, key=lambda n: (-scores[n], n))[: 2 * size]
    return PoolChoice(
        rule="analysts",
        day=str(view.as_of),
        size=size,
        analyst_set=analyst_set,
        names=top_k(scores, size),
        candidates=len(names),
        weighting=weighting,
        weights={k: round(v, 6) for k, v in weights.items()},
        ic={k: (None if v is None else round(v, 6)) for k, v in ic.items()},
        validation=window,
        note=note,
        scores={n: round(scores[n], 6) for n in best},
        analyst_calls=calls,
    )


def random_choice(
    dataset: Dataset, first_day: DayLike, size: int, seed: int, analyst_set: str, first: bool
) -> PoolChoice:
    """The random control as a `PoolChoice`."""
    view = MarketView(dataset, first_day)
    return PoolChoice(
        rule="random",
        day=str(view.as_of),
        size=size,
        analyst_set=analyst_set,
        names=draw_pool(dataset, first_day, size, seed, first),
        candidates=len(_candidates(dataset, view, size, first_day)),
        note=f"seeded draw (seed {seed}, K {size}), evidence names first: {first}",
    )


def choice_bytes(choice: PoolChoice) -> bytes:
    """The record as sorted, indented JSON (what is written)."""
    return (json.dumps(choice.model_dump(mode="json"), sort_keys=True, indent=1) + "\n").encode()


def sector_map(dataset: Dataset, names: Sequence[str], policy: str = "own") -> dict[str, str]:
    """Name -> sector from the dataset's instruments; a name without one per `policy`
    (`own`: `unknown (<name>)`, `shared`: `unknown`, `error`: left out)."""
    table = dataset.instruments
    known = (
        dict(zip(table["symbol"].astype(str), table["sector"], strict=True))
        if "sector" in table
        else {}
    )
    out = {}
    for n in names:
        sector = known.get(n)
        if isinstance(sector, str) and sector:
            out[n] = sector
        elif policy == "own":
            out[n] = f"{UNKNOWN_SECTOR} ({n})"
        elif policy == "shared":
            out[n] = UNKNOWN_SECTOR
    return out
