"""The portfolio benchmark's starting capital, and how far its account grid hides lots.

Under rebased prices the model reads money, weights and holdings on a grid of 0.1% of the
initial capital (`shown.ACCOUNT_GRID`). A stock's lot stays hidden while one lot is worth
under half a grid step; a lot that shows gives its raw price back (order sizes, holdings).
So the capital of a run with model episodes under rebased prices is, unless the spec sets
one, the smallest 1-2-5 figure whose grid hides every lot of each window's first-day
universe, with room for prices to double (`LOT_HEADROOM`). Any other run keeps
`DEFAULT_CAPITAL`, so baselines and bright runs are what they were.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import numpy as np

from tradebench.benchmarks.portfolio.agent import rebase_close
from tradebench.benchmarks.portfolio.shown import LotExposure, lot_exposure
from tradebench.data.dataset import Dataset
from tradebench.market.rules import MarketRules
from tradebench.runs.broker.engine import trading_days
from tradebench.runs.spec import Window
from tradebench.view import MarketView

log = logging.getLogger("tradebench.runs")

DEFAULT_CAPITAL = 1_000_000.0
"""The capital of a run whose spec sets none and whose model episodes (if any) see raw
prices."""
LOT_HEADROOM = 2.0
"""How far prices may rise after the first day before the dearest lot shows: the default
capital hides lots worth up to twice their rebase close."""


def round_up_125(value: float) -> float:
    """The smallest figure of the 1-2-5 series (1, 2, 5, 10, 20, ...) at or above `value`."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for mantissa in (1, 2, 5, 10):
        figure = float(mantissa * 10**exponent)
        if figure >= value * (1 - 1e-12):
            return figure
    return float(10 ** (exponent + 1))  # pragma: no cover - 10 above always holds


def first_day_bases(ds: Dataset, first_day: np.datetime64) -> np.ndarray:
    """The rebase closes (the close before `first_day`) of `first_day`'s index members."""
    view = MarketView(ds, first_day)
    return rebase_close(view, first_day)[view.member_mask()]


def episode_lot_exposure(ds: Dataset, start: str, end: str, rules: MarketRules) -> LotExposure:
    """How far the account grid of an episode starting at `start` hides the lots of its
    first day's universe under rebased prices (`shown.lot_exposure`)."""
    first = ds.panel.dates[trading_days(ds.panel, start, end)[0]]
    return lot_exposure(first_day_bases(ds, first), rules.lot_size, rules.initial_cash)


def hiding_capital(ds: Dataset, first_days: Iterable[np.datetime64], lot: int) -> float:
    """The smallest 1-2-5 capital (at least `DEFAULT_CAPITAL`) whose grid hides one lot of
    every stock in the universe of each first day, at `LOT_HEADROOM` times its rebase close."""
    need = max(
        (lot_exposure(first_day_bases(ds, day), lot, 1.0).capital_to_hide for day in first_days),
        default=0.0,
    )
    return max(DEFAULT_CAPITAL, round_up_125(need * LOT_HEADROOM))


def default_capital(ds: Dataset, windows: Iterable[Window], hides_levels: bool) -> float:
    """A run's capital when its spec sets none: `hiding_capital` over the windows' first
    decision days when a model episode runs under rebased prices (`hides_levels`),
    `DEFAULT_CAPITAL` otherwise."""
    if not hides_levels:
        return DEFAULT_CAPITAL
    panel = ds.panel
    firsts = [panel.dates[trading_days(panel, str(w.start), str(w.end))[0]] for w in windows]
    return hiding_capital(ds, firsts, MarketRules.for_market(ds.market).lot_size)


def warn_if_lots_show(ds: Dataset, window: Window, rules: MarketRules) -> None:
    """Say on screen when rebased prices cannot hide some lots at the spec's capital."""
    exposure = episode_lot_exposure(ds, str(window.start), str(window.end), rules)
    if exposure.visible_share > 0:
        log.warning(
            "under rebased prices the account grid (0.1%% of the initial cash) cannot hide "
            "one lot of %.0f%% of the universe in %s..%s, so their price levels can be read "
            "from holdings and order sizes; an initial_cash of %s or more hides every lot "
            "(omit initial_cash for a capital that does, docs/portfolio.md)",
            exposure.visible_share * 100,
            window.start,
            window.end,
            f"{exposure.capital_to_hide:,.0f}",
        )
