"""Scoring of attacker guesses and the analytic random baselines: pure, typed functions.

- Tickers are normalised (`600519.SH`, `sh600519`, `600519` -> `SH600519`) before they
  are compared with the gold ticker: top-1 and top-5 hits.
- A date is a hit when it lies within `tolerance` trading days of the gold date. A
  non-trading day counts as the next trading day; outside the calendar, weekdays extend it.
- Joint success: the ticker is in the top 5 and the date is a hit.
- Sector: case- and space-insensitive equality; undefined (None) without a gold sector.
- Random baselines: a uniform guess over the universe on T (1/N, 5/N), a uniform date over
  the range gold dates were drawn from, 1/K sectors, 1/B boards; joint = top-5 x date.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from tradebench.probe.types import AttackGuess, Gold

DATE_TOLERANCE = 7
"""Trading days either side of the gold date that count as a date hit."""
TOP_K = 5
"""Tickers an attacker may list."""
_CN_CODE = re.compile(r"^(?:(SH|SZ|BJ|SS)[.:]?)?(\d{6})(?:[.:](SH|SZ|BJ|SS))?$")


def normalise_ticker(text: str, market: str = "cn") -> str:
    """A guessed ticker in the dataset's form (`SH600519`); unknown forms upper-cased."""
    code = re.sub(r"\s+", "", str(text)).upper()
    if market != "cn":
        return code
    m = _CN_CODE.match(code)
    if m is None:
        return code
    exch = (m.group(1) or m.group(3) or "").replace("SS", "SH")
    if not exch:
        exch = {"6": "SH", "0": "SZ", "3": "SZ", "8": "BJ", "4": "BJ", "9": "BJ"}.get(
            m.group(2)[0], "SZ"
        )
    return f"{exch}{m.group(2)}"


def parse_guess(raw: Any) -> AttackGuess | None:
    """A validated guess from a dict or JSON text; None when it cannot be read."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
    if not isinstance(raw, dict):
        return None
    try:
        return AttackGuess.model_validate(raw)
    except ValidationError:
        return None


def calendar_position(calendar: np.ndarray, day: date) -> int:
    """Trading-day position of `day`: the next trading day's, weekdays beyond the ends."""
    cal = np.asarray(calendar).astype("datetime64[D]")
    d = np.datetime64(day, "D")
    if d < cal[0]:
        return -int(np.busday_count(d, cal[0]))
    if d > cal[-1]:
        return len(cal) + int(np.busday_count(cal[-1] + np.timedelta64(1, "D"), d))
    return int(np.searchsorted(cal, d, side="left"))


def date_distance(calendar: np.ndarray, guess: date, gold_pos: int) -> int:
    """Absolute distance in trading days between a guessed date and the gold date."""
    return abs(calendar_position(calendar, guess) - gold_pos)


def _norm_text(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").strip().lower())


class ProbeScore(BaseModel):
    """How one guess fared against the gold answer."""

    model_config = ConfigDict(frozen=True)

    top1: bool
    """The first ticker is the gold ticker."""
    top5: bool
    """The gold ticker is among the (up to five) tickers."""
    date_distance: int
    """Trading days between the guessed and the gold date."""
    date_ok: bool
    """`date_distance <= tolerance`."""
    joint: bool
    """`top5` and `date_ok`."""
    sector_ok: bool | None
    """Sector match; None when the gold has no sector."""
    board_ok: bool
    """Board match."""


def score_guess(
    guess: AttackGuess,
    gold: Gold,
    calendar: np.ndarray,
    market: str = "cn",
    tolerance: int = DATE_TOLERANCE,
) -> ProbeScore:
    """Score one validated guess."""
    tickers = [normalise_ticker(t, market) for t in guess.tickers[:TOP_K]]
    distance = date_distance(calendar, date.fromisoformat(guess.date), gold.date_pos)
    top5 = gold.symbol in tickers
    date_ok = distance <= tolerance
    sector_ok = None if gold.sector is None else _norm_text(guess.sector) == _norm_text(gold.sector)
    return ProbeScore(
        top1=bool(tickers) and tickers[0] == gold.symbol,
        top5=top5,
        date_distance=distance,
        date_ok=date_ok,
        joint=top5 and date_ok,
        sector_ok=sector_ok,
        board_ok=guess.board == gold.board,
    )


class Baselines(BaseModel):
    """Success probabilities of a uniform random guesser for one probe."""

    model_config = ConfigDict(frozen=True)

    top1: float
    """1 / universe size."""
    top5: float
    """min(5 / universe size, 1)."""
    date: float
    """Share of the gold-date range within `tolerance` trading days of the gold date."""
    joint: float
    """`top5 x date` (independent guesses)."""
    sector: float | None
    """1 / number of sectors; None without a gold sector."""
    board: float
    """1 / number of boards."""


def date_window_probability(
    gold_pos: int, lo: int, hi: int, tolerance: int = DATE_TOLERANCE
) -> float:
    """P(a uniform date in positions [lo, hi] is within `tolerance` of `gold_pos`)."""
    if hi < lo:
        return float("nan")
    hits = min(hi, gold_pos + tolerance) - max(lo, gold_pos - tolerance) + 1
    return max(hits, 0) / (hi - lo + 1)


def random_baselines(
    universe_size: int,
    gold_pos: int,
    date_lo: int,
    date_hi: int,
    n_sectors: int,
    n_boards: int,
    has_sector: bool,
    tolerance: int = DATE_TOLERANCE,
) -> Baselines:
    """The analytic random baselines of one probe."""
    size = max(universe_size, 1)
    top5 = min(TOP_K / size, 1.0)
    p_date = date_window_probability(gold_pos, date_lo, date_hi, tolerance)
    return Baselines(
        top1=1.0 / size,
        top5=top5,
        date=p_date,
        joint=top5 * p_date,
        sector=1.0 / n_sectors if has_sector and n_sectors > 0 else None,
        board=1.0 / max(n_boards, 1),
    )
