"""US equities through yfinance (Yahoo daily bars with dividends and splits).

Fetch: `yf.download(tickers, start, end + 1 day, auto_adjust=False, actions=True,
group_by="column", multi_level_index=True)` (Yahoo's `end` is exclusive) and each ticker's
full split history, `yf.Ticker(t).splits`. Frame shape (yfinance source): a `Date` index
and MultiIndex columns (`Price`, `Ticker`) with prices `Adj Close, Close, High, Low,
Open, Volume, Dividends, Stock Splits`.

Yahoo's `Close`, OHLC and `Volume` are already split-adjusted (to today's share basis);
`Adj Close` is split- and dividend-adjusted. Convert: the split multiplier of a day is the
product of every split ratio after it (the full history, so splits after the window count
too); raw price = price x multiplier, shares = volume / multiplier, `adj_factor` =
`Adj Close` / raw close (adjusted = raw x factor = Yahoo's adjusted prices). Days a ticker
lacks inside its span become flat suspended bars; zero-volume days are flagged by the checks.
There is no index membership in yfinance. An index ticker (`^GSPC`, `SPY`) becomes the
index table on adjusted prices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tradebench.data.pull.common import (
    BAR_COLUMNS,
    Converted,
    PullRequest,
    day,
    fill_missing_days,
    import_library,
)
from tradebench.data.schema import Finding
from tradebench.errors import DataError

PRICE_FIELDS = ["Open", "High", "Low", "Close", "Adj Close", "Volume"]


@dataclass(frozen=True)
class YahooFrames:
    """What yfinance returned: the download frame and each ticker's split history."""

    prices: pd.DataFrame
    splits: dict[str, pd.Series] = field(default_factory=dict)
    index_ticker: str | None = None


def fetch_yfinance(req: PullRequest) -> YahooFrames:
    """Download the tickers (and the index) and each ticker's split history (the request
    is checked before the library is imported)."""
    tickers = list(dict.fromkeys([*req.symbols, *([req.index] if req.index else [])]))
    if not tickers:
        raise DataError("yfinance: name the tickers with --symbols (and --index)")
    yf = import_library("yfinance", "yfinance")
    end = (pd.Timestamp(req.end) + pd.Timedelta(days=1)).strftime("%Y-%m-%d")
    prices = yf.download(
        tickers,
        start=req.start,
        end=end,
        auto_adjust=False,
        actions=True,
        group_by="column",
        multi_level_index=True,
        progress=False,
    )
    if prices is None or prices.empty:
        raise DataError(f"yfinance returned no bars for {tickers} in {req.start}..{req.end}")
    splits = {t: yf.Ticker(t).splits for t in req.symbols}
    return YahooFrames(prices, splits, req.index)


def _long(prices: pd.DataFrame) -> pd.DataFrame:
    """The (Price, Ticker) columns as one row per (date, ticker); all-NaN rows dropped."""
    if not isinstance(prices.columns, pd.MultiIndex) or prices.columns.nlevels != 2:
        raise DataError(
            "yfinance frame must have (Price, Ticker) columns: download with multi_level_index=True"
        )
    level = 1 if "Close" in prices.columns.get_level_values(1) else 0
    stacked = prices.stack(level=1 - level, future_stack=True)
    stacked.index = stacked.index.set_names(["date", "ticker"])
    missing = [c for c in PRICE_FIELDS if c not in stacked.columns]
    if missing:
        raise DataError(f"yfinance frame lacks {missing}: download with auto_adjust=False")
    stacked = stacked.dropna(subset=["Open", "High", "Low", "Close", "Adj Close"], how="all")
    out = stacked.reset_index()
    return out.assign(date=day(out["date"]), ticker=out["ticker"].astype(str))


def split_multiplier(dates: pd.Series, splits: pd.Series | None) -> np.ndarray:
    """Product of the split ratios strictly after each day (1 where none)."""
    mult = np.ones(len(dates))
    if splits is None or len(splits) == 0:
        return mult
    when = day(pd.Series(splits.index)).to_numpy()
    ratio = pd.to_numeric(pd.Series(splits.to_numpy()), errors="coerce").to_numpy()
    keep = np.isfinite(ratio) & (ratio > 0)
    when, ratio = when[keep], ratio[keep]
    values = dates.to_numpy(dtype="datetime64[ns]")
    for w, r in zip(when, ratio, strict=True):
        mult[values < w] *= r
    return mult


def _bars(frame: pd.DataFrame, splits: dict[str, pd.Series]) -> pd.DataFrame:
    pieces = []
    for ticker, rows in frame.groupby("ticker", sort=True):
        mult = split_multiplier(rows["date"], splits.get(str(ticker)))
        close = rows["Close"].to_numpy(dtype=np.float64) * mult
        pieces.append(
            pd.DataFrame(
                {
                    "date": rows["date"].to_numpy(),
                    "symbol": str(ticker),
                    **{
                        c.lower(): rows[c].to_numpy(dtype=np.float64) * mult
                        for c in ("Open", "High", "Low")
                    },
                    "close": close,
                    "adj_factor": rows["Adj Close"].to_numpy(dtype=np.float64) / close,
                    "volume": rows["Volume"].to_numpy(dtype=np.float64) / mult,
                    "amount": np.nan,
                    "change": np.nan,
                }
            )
        )
    return pd.concat(pieces, ignore_index=True)


def _index(frame: pd.DataFrame, ticker: str) -> pd.DataFrame:
    rows = frame[frame["ticker"] == ticker]
    if rows.empty:
        raise DataError(f"yfinance returned no bars for the index {ticker!r}")
    ratio = rows["Adj Close"].to_numpy(dtype=np.float64) / rows["Close"].to_numpy(dtype=np.float64)
    out = pd.DataFrame({"date": rows["date"].to_numpy(), "symbol": ticker})
    for col in ("Open", "High", "Low", "Close"):
        out[col.lower()] = rows[col].to_numpy(dtype=np.float64) * ratio
    out["volume"] = rows["Volume"].to_numpy(dtype=np.float64)
    return out.sort_values("date", kind="stable").reset_index(drop=True)


def convert_yfinance(frames: YahooFrames) -> Converted:
    """Turn a yfinance download into canonical bars with raw prices and factors (pure)."""
    frame = _long(frames.prices)
    index = None
    if frames.index_ticker:
        index = _index(frame, frames.index_ticker)
        frame = frame[frame["ticker"] != frames.index_ticker]
    if frame.empty:
        raise DataError("yfinance returned no bars for any requested ticker")
    bars = _bars(frame, frames.splits)
    calendar = bars["date"].to_numpy()
    if index is not None:
        calendar = np.concatenate([calendar, index["date"].to_numpy()])
    bars, filled = fill_missing_days(bars[[*BAR_COLUMNS, "change"]], calendar)
    n_splits = sum(len(s) for s in frames.splits.values())
    notes = (
        [
            Finding(
                kind="note",
                count=n_splits,
                examples=[
                    f"{t}@{pd.Timestamp(d).date()} x{r:g}"
                    for t, s in frames.splits.items()
                    for d, r in s.items()
                ][:10],
                detail="Yahoo prices and volume are split-adjusted: splits undone to raw "
                "prices and shares with these ratios",
            )
        ]
        if n_splits
        else []
    )
    return Converted(
        bars=bars,
        price_basis="raw_with_factor",
        sources=("yfinance:download", "yfinance:Ticker.splits"),
        index=index,
        findings=tuple(filled + notes),
    )
