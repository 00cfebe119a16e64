"""Market clocks: when each market opens, and the decision instant of a trading day.

The decision for trading day T is taken before T's open, so the decision instant is the
market's opening time on T in its own time zone (DST-aware), converted to UTC:

- `us`: 09:30 America/New_York (14:30 UTC in winter, 13:30 UTC in summer);
- `cn`: 09:30 Asia/Shanghai (01:30 UTC all year).

A text record is visible at T when `ts_available <= decision_time(T, market)`: a record
stamped exactly at the open is visible, one a nanosecond later is not. The benchmark, the
view and any audit use this one definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, time
from functools import lru_cache

import numpy as np
import pandas as pd

from tradebench.errors import ConfigError

DayLike = date | str | np.datetime64 | pd.Timestamp


@dataclass(frozen=True)
class MarketOpen:
    """Where and when a market's regular session opens.

    Attributes:
        timezone: IANA zone of the exchange (`America/New_York`, `Asia/Shanghai`).
        open: local opening time of the regular session.
    """

    timezone: str
    open: time


MARKET_OPEN: dict[str, MarketOpen] = {
    "us": MarketOpen(timezone="America/New_York", open=time(9, 30)),
    "cn": MarketOpen(timezone="Asia/Shanghai", open=time(9, 30)),
}


def to_day(value: DayLike) -> np.datetime64:
    """Normalise a date-like value to `datetime64[D]` (a time of day is dropped).

    Raises:
        ConfigError: `value` is not a date (e.g. `2024-13-45`).
    """
    try:
        return np.datetime64(pd.Timestamp(value).date(), "D")
    except (ValueError, TypeError, OverflowError, NotImplementedError) as exc:
        raise ConfigError(f"{value!r} is not a date ({exc}); use YYYY-MM-DD") from None


def market_open(market: str) -> MarketOpen:
    """The opening clock of `market` (`cn` or `us`).

    Raises:
        ConfigError: the market has no known opening time.
    """
    try:
        return MARKET_OPEN[market]
    except KeyError:
        raise ConfigError(
            f"unknown market {market!r}: no opening time; use one of {sorted(MARKET_OPEN)}"
        ) from None


def decision_time(day: DayLike, market: str) -> pd.Timestamp:
    """The decision instant of trading day `day`: the market's open on that day, in UTC.

    Records with `ts_available <=` this instant are visible to the decision for `day`.
    Example: `decision_time("2025-03-10", "us")` is 2025-03-10 13:30 UTC (EDT began on
    2025-03-09); `decision_time("2025-03-07", "us")` is 14:30 UTC.
    """
    return pd.Timestamp(decision_ns(to_day(day), market), tz="UTC")


@lru_cache(maxsize=65536)
def decision_ns(day: np.datetime64, market: str) -> int:
    """`decision_time` as int64 nanoseconds since the epoch, cached per (day, market)."""
    clock = market_open(market)
    local = pd.Timestamp.combine(pd.Timestamp(day).date(), clock.open)
    return int(local.tz_localize(clock.timezone).tz_convert("UTC").as_unit("ns").value)
