"""What the agent sees at decision day i's close, built only through `MarketView`.

The decision at day i's close uses data through day i inclusive, which is exactly a view
at the next trading day (`MarketView(as_of=next day)` shows rows strictly before it), so
the point-in-time gate still holds. Rendering masks every date and identifier.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.single_stock.config import Persona, Stance
from tradebench.benchmarks.single_stock.ledger import Action
from tradebench.benchmarks.single_stock.prompt_files import PromptSet, stance_line
from tradebench.errors import DataError
from tradebench.masking import Masker
from tradebench.view import MarketView

BARS_SHOWN = 7
RECENT_SHOWN = 5
LOOKBACK = 21  # 20-day return needs 21 closes


class Bar(BaseModel):
    """One daily bar (adjusted OHLC, volume)."""

    model_config = ConfigDict(frozen=True)

    day: date
    open: float
    high: float
    low: float
    close: float
    volume: float


class PastDecision(BaseModel):
    """One earlier decision as the agent is reminded of it."""

    model_config = ConfigDict(frozen=True)

    day: date
    action: Action
    position: int
    earned: float
    """Log return the resulting position earned (settled by the current decision day)."""


class Observation(BaseModel):
    """The state of the world at one decision (real dates; masking happens on render)."""

    model_config = ConfigDict(frozen=True)

    day: date
    step: int
    total: int
    bars: list[Bar]
    momentum_3d: float | None
    ret_5d: float | None
    ret_20d: float | None
    position: int
    cum_return: float
    stance: Stance
    recent: list[PastDecision]


def _ret(closes: np.ndarray, days: int) -> float | None:
    if len(closes) <= days or not (closes[-1 - days] > 0):
        return None
    return float(closes[-1] / closes[-1 - days] - 1.0)


def market_part(view: MarketView, symbol: str, day: date) -> dict:
    """Bars and signals of `symbol` through `day` (the view's last visible day).

    Raises:
        DataError: The symbol has no bar on `day` (not listed or the view is misplaced).
    """
    hist = view.history(symbol, LOOKBACK, adjusted=True)
    if hist.empty or hist.index[-1].date() != day:
        raise DataError(f"{symbol} has no bar on {day}: choose a window where it trades")
    closes = hist["close"].to_numpy(dtype=float)
    bars = [
        Bar(
            day=ts.date(),
            open=float(row.open),
            high=float(row.high),
            low=float(row.low),
            close=float(row.close),
            volume=float(row.volume),
        )
        for ts, row in hist.tail(BARS_SHOWN).iterrows()
    ]
    return {
        "bars": bars,
        "momentum_3d": _ret(closes, 3),
        "ret_5d": _ret(closes, 5),
        "ret_20d": _ret(closes, 20),
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value * 100:+.2f}%"


def _position(p: int) -> str:
    return {1: "long (+1)", -1: "short (-1)", 0: "flat (0)"}[p]


def _volume(value: float, base: float | None) -> str:
    if base:
        return f"{value / base:.2f}x"
    return f"{value / 1e6:.2f}M"


def _bars_table(obs: Observation, masker: Masker, scale: float, volume_base: float | None) -> str:
    lines = ["| day | open | high | low | close | volume |", "|---|---|---|---|---|---|"]
    for b in obs.bars:
        prices = " | ".join(f"{v * scale:.2f}" for v in (b.open, b.high, b.low, b.close))
        lines.append(f"| {masker.day_label(b.day)} | {prices} | {_volume(b.volume, volume_base)} |")
    return "\n".join(lines)


def _recent(obs: Observation, masker: Masker) -> str:
    if not obs.recent:
        return "- none yet"
    return "\n".join(
        f"- {masker.day_label(d.day)}: {d.action} -> {_position(d.position)}, "
        f"earned {_pct(float(np.expm1(d.earned)))}"
        for d in obs.recent
    )


def render_user(
    obs: Observation,
    masker: Masker,
    prompts: PromptSet,
    asset: str,
    persona: Persona,
    rebase: tuple[float, float] | None = None,
) -> str:
    """The day's user message, masked.

    Args:
        rebase: (close, volume) of the day before the episode for `rebased` prices
            (close = 100, volume as a multiple); None shows actual adjusted prices.
    """
    scale = 100.0 / rebase[0] if rebase else 1.0
    note = "prices rebased: 100 = close before the episode" if rebase else "adjusted prices"
    text = prompts.text("user.md").format(
        day=masker.day_label(obs.day),
        step=obs.step,
        total=obs.total,
        asset=asset,
        stance=stance_line(persona, obs.stance),
        price_note=note,
        bars=_bars_table(obs, masker, scale, rebase[1] if rebase else None),
        momentum_3d=_pct(obs.momentum_3d),
        ret_5d=_pct(obs.ret_5d),
        ret_20d=_pct(obs.ret_20d),
        position=_position(obs.position),
        cum_return=_pct(obs.cum_return),
        recent=_recent(obs, masker),
    )
    return masker.mask_text(text)


def to_date(value: object) -> date:
    """A date from a datetime64, Timestamp or ISO string."""
    return pd.Timestamp(value).date()
