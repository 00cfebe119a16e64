"""What every pull source shares: the request, the converted frames, gap filling, writing."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Literal

import numpy as np
import pandas as pd

from tradebench.data.assemble import assemble_dataset
from tradebench.data.schema import Finding, Manifest
from tradebench.errors import ConfigError

Source = Literal["akshare", "baostock", "yfinance"]
SOURCES: tuple[Source, ...] = ("akshare", "baostock", "yfinance")
MARKET: dict[str, Literal["cn", "us"]] = {"akshare": "cn", "baostock": "cn", "yfinance": "us"}
EXTRA = {"akshare": "cn-data", "baostock": "cn-data", "yfinance": "us-data"}
BAR_COLUMNS = ("date", "symbol", "open", "high", "low", "close", "adj_factor", "volume", "amount")


@dataclass(frozen=True)
class PullRequest:
    """What to pull.

    Attributes:
        source: `akshare` or `baostock` (A-shares) or `yfinance` (US).
        out: dataset folder to write.
        start / end: first and last day (inclusive, `YYYY-MM-DD`).
        symbols: codes in any usual spelling (`600519`, `sh.600519`, `SH600519`; tickers).
        members: `csi300` (CN only): pull the index's membership and its members' bars.
        index: benchmark index to pull (`SH000300`; a ticker such as `^GSPC` or `SPY`).
        name: dataset name (default `<source>-<start>-<end>`).
    """

    source: Source
    out: Path
    start: str
    end: str
    symbols: tuple[str, ...] = ()
    members: str | None = None
    index: str | None = None
    name: str | None = None

    @property
    def market(self) -> Literal["cn", "us"]:
        """Market whose rules apply to the pulled data."""
        return MARKET[self.source]


@dataclass(frozen=True)
class Converted:
    """Canonical frames from one source, ready for `assemble_dataset`.

    `bars` has the canonical bar columns (raw prices, `adj_factor`, volume in shares) and
    a `change` column: the source's own % change of the adjusted close (NaN where none).
    """

    bars: pd.DataFrame
    price_basis: Literal["raw_with_factor", "adjusted"]
    sources: tuple[str, ...]
    index: pd.DataFrame | None = None
    membership: pd.DataFrame | None = None
    names: dict[str, str] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()


def import_library(name: str, source: str) -> ModuleType:
    """Import a source's library, or say which extra installs it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(
            f"--source {source} needs the `{name}` package: "
            f"pip install 'tradebench[{EXTRA[source]}]'"
        ) from None


def examples(symbols: pd.Series, dates: pd.Series, n: int = 10) -> list[str]:
    """`SYMBOL@DATE` samples, as the import findings list them."""
    pairs = zip(symbols.head(n), dates.head(n), strict=True)
    return [f"{s}@{pd.Timestamp(d).date()}" for s, d in pairs]


def fill_missing_days(
    bars: pd.DataFrame, calendar: np.ndarray
) -> tuple[pd.DataFrame, list[Finding]]:
    """Add a flat bar for each calendar day a symbol lacks between its first and last bar.

    Sources such as East Money and Yahoo leave suspended days out; the dataset convention
    is a flat bar at the previous close with no volume (the checks then mark it
    suspended, so the broker never fills on it). The added days are reported.
    """
    days = np.unique(np.asarray(calendar, dtype="datetime64[ns]"))
    span = bars.groupby("symbol", sort=True)["date"].agg(["min", "max"])
    keys_sym, keys_day = [], []
    for sym, lo, hi in zip(span.index, span["min"], span["max"], strict=True):
        inside = days[(days >= np.datetime64(lo, "ns")) & (days <= np.datetime64(hi, "ns"))]
        keys_sym.append(np.full(len(inside), sym, dtype=object))
        keys_day.append(inside)
    full = pd.MultiIndex.from_arrays(
        [np.concatenate(keys_sym), np.concatenate(keys_day)], names=["symbol", "date"]
    )
    indexed = bars.set_index(["symbol", "date"])
    added = ~full.isin(indexed.index)
    if not added.any():
        return bars, []
    grid = indexed.reindex(full)
    carried = grid[["close", "adj_factor"]].groupby(level="symbol").ffill()
    for col in ("open", "high", "low", "close"):
        grid.loc[added, col] = carried.loc[added, "close"]
    grid.loc[added, "adj_factor"] = carried.loc[added, "adj_factor"]
    grid.loc[added, ["volume", "amount", "change"]] = np.nan
    out = grid.reset_index()
    new = out[added]
    finding = Finding(
        kind="suspension_filled",
        count=int(added.sum()),
        examples=examples(new["symbol"], new["date"]),
        detail="trading days absent from the source inside the symbol's first..last bar: "
        "flat bars at the previous close added with no volume (suspended)",
    )
    return out[[*BAR_COLUMNS, "change"]], [finding]


def write_converted(req: PullRequest, conv: Converted) -> Manifest:
    """Write converted frames as a dataset, with the shared checks and findings."""
    bars = conv.bars.sort_values(["symbol", "date"], kind="stable").reset_index(drop=True)
    change = bars["change"]
    return assemble_dataset(
        req.out,
        bars[list(BAR_COLUMNS)],
        market=req.market,
        name=req.name or f"{req.source}-{req.start}-{req.end}",
        price_basis=conv.price_basis,
        sources=list(conv.sources),
        index=conv.index,
        membership=conv.membership,
        names=conv.names,
        reported_change=change,
        extra_findings=list(conv.findings),
    )


def day(values: pd.Series) -> pd.Series:
    """Parse dates (strings, `date` objects, timestamps with or without a zone) to midnight."""
    parsed = pd.to_datetime(values)
    if getattr(parsed.dt, "tz", None) is not None:
        parsed = parsed.dt.tz_localize(None)
    return parsed.dt.normalize().astype("datetime64[ns]")
