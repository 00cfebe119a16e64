"""yfinance conversion on a frame in yfinance's documented shape, built from the shared US file.

The shared prices stand in for Yahoo's split-adjusted `Close`; `Adj Close` applies
dividends by Yahoo's rule (each ex-date multiplies every earlier price by 1 - D / the
previous close); `Stock Splits` and the split history are the real splits (NVDA's 10:1 of
2024 falls after the window). The oracle is the long importer on the same shared rows.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from tradebench.data.dataset import load_dataset
from tradebench.data.importers.long import LongImport, import_long
from tradebench.data.pull import pull_dataset
from tradebench.data.pull.common import PullRequest, write_converted
from tradebench.data.pull.yfinance_source import YahooFrames, convert_yfinance

TICKERS = ("AAPL", "TSLA", "NVDA")
START, END = "2020-06-01", "2022-12-30"
SPLITS = {
    "AAPL": {"2020-08-31": 4.0},
    "TSLA": {"2020-08-31": 5.0, "2022-08-25": 3.0},
    "NVDA": {"2021-07-20": 4.0, "2024-06-10": 10.0},
}
EX_DATES = ("2020-08-07", "2021-02-05", "2021-11-05", "2022-05-06")
DROPPED = ("2021-03-10", "2021-03-11")
"""TSLA days left out of the frame (as Yahoo leaves out a halted day)."""


def _multiplier(ticker: str, dates: pd.Series) -> np.ndarray:
    """Shares per Yahoo share on each day, from the split list (written out here)."""
    out = np.ones(len(dates))
    for when, ratio in SPLITS[ticker].items():
        out[(dates < pd.Timestamp(when)).to_numpy()] *= ratio
    return out


def _dividend_adjust(close: pd.Series, dates: pd.Series) -> np.ndarray:
    ratio = np.ones(len(close))
    prev = close.shift(1).to_numpy()
    for ex in EX_DATES:
        at = np.flatnonzero((dates == pd.Timestamp(ex)).to_numpy())
        if len(at):
            dividend = 0.005 * prev[at[0]]  # half a percent of the previous close
            ratio[: at[0]] *= 1 - dividend / prev[at[0]]
    return close.to_numpy() * ratio


@pytest.fixture(scope="module")
def yahoo(shared_data) -> YahooFrames:
    rows = pd.read_parquet(shared_data / "us" / "sp500_daily_adj_2005_2025.parquet")
    rows = rows[rows["symbol"].isin([*TICKERS, "SPY"])].astype({"symbol": str})
    rows = rows[(rows["date"] >= START) & (rows["date"] <= END)].sort_values(["symbol", "date"])
    per = {}
    for ticker, r in rows.groupby("symbol"):
        if ticker == "TSLA":
            r = r[~r["date"].isin(pd.to_datetime(list(DROPPED)))]
        split_col = r["date"].dt.strftime("%Y-%m-%d").map(SPLITS.get(ticker, {})).fillna(0.0)
        per[ticker] = pd.DataFrame(
            {
                "Adj Close": _dividend_adjust(r["close"].astype("float64"), r["date"]),
                "Close": r["close"].astype("float64").to_numpy(),
                "Dividends": 0.0,
                "High": r["high"].astype("float64").to_numpy(),
                "Low": r["low"].astype("float64").to_numpy(),
                "Open": r["open"].astype("float64").to_numpy(),
                "Stock Splits": split_col.to_numpy(),
                "Volume": r["volume"].to_numpy(),
            },
            index=pd.DatetimeIndex(r["date"].to_numpy(), name="Date"),
        )
    # what yf.download(..., group_by="column") returns: (Price, Ticker) columns
    frame = pd.concat(per, axis=1, sort=True, names=["Ticker", "Price"])
    frame.columns = frame.columns.swaplevel(0, 1)
    frame = frame.sort_index(level=0, axis=1)
    splits = {
        t: pd.Series(
            list(s.values()), index=pd.DatetimeIndex(list(s), name="Date"), name="Stock Splits"
        )
        for t, s in SPLITS.items()
    }
    return YahooFrames(frame, splits, "SPY")


@pytest.fixture(scope="module")
def oracle(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle_us") / "us"
    import_long(
        LongImport(
            source=shared_data / "us" / "sp500_daily_adj_2005_2025.parquet",
            out=out,
            market="us",
            index_symbol="SPY",
            symbols=TICKERS,
            start=START,
            end=END,
        )
    )
    return load_dataset(out)


def test_yfinance_frame_has_the_library_shape(yahoo):
    assert yahoo.prices.columns.names == ["Price", "Ticker"]
    assert yahoo.prices.index.name == "Date"


def test_yfinance_conversion_undoes_splits_and_keeps_factors(yahoo, oracle, tmp_path):
    req = PullRequest(source="yfinance", out=tmp_path / "yf", start=START, end=END)
    write_converted(req, convert_yfinance(yahoo))
    ds = load_dataset(req.out)
    assert ds.manifest.price_basis == "raw_with_factor"
    ours = ds.bars.set_index(["symbol", "date"]).sort_index()
    want = oracle.bars.set_index(["symbol", "date"]).sort_index()
    assert ours.index.equals(want.index)  # TSLA's two missing days are filled
    for ticker in TICKERS:
        o, w = ours.loc[ticker], want.loc[ticker]
        if ticker == "TSLA":  # the left-out days are flat bars here, real bars there
            o, w = (x.drop(index=pd.to_datetime(list(DROPPED))) for x in (o, w))
        mult = _multiplier(ticker, pd.Series(o.index))
        for col in ("open", "high", "low", "close"):
            np.testing.assert_allclose(o[col] / mult, w[col], rtol=1e-12)
        np.testing.assert_allclose(o["volume"] * mult, w["volume"], rtol=1e-9)
        adjusted = _dividend_adjust(pd.Series(w["close"].to_numpy()), pd.Series(w.index))
        np.testing.assert_allclose(o["close"] * o["adj_factor"], adjusted, rtol=1e-12)
    tsla = ours.loc["TSLA"]
    halted = tsla.loc[pd.to_datetime(list(DROPPED))]
    assert halted["suspended"].all() and (halted["volume"] == 0).all()
    assert ours.loc[("NVDA", pd.Timestamp("2021-07-19")), "close"] == pytest.approx(
        want.loc[("NVDA", pd.Timestamp("2021-07-19")), "close"] * 40
    )
    spy = oracle.index
    np.testing.assert_allclose(
        ds.index["close"], _dividend_adjust(spy["close"], spy["date"]), rtol=1e-12
    )  # the index on Yahoo's adjusted prices
    filled = [f for f in ds.manifest.findings if f.kind == "suspension_filled"]
    assert any(f.count == 2 and f.examples[0].startswith("TSLA@2021-03-10") for f in filled)
    assert any("split" in f.detail for f in ds.manifest.findings)


def test_fetch_yfinance_calls_the_library_and_writes_the_dataset(yahoo, tmp_path, monkeypatch):
    yf = pytest.importorskip("yfinance", reason="needs the `us-data` extra")
    signature = inspect.signature(yf.download)
    asked: dict[str, object] = {}

    def download(*args, **kwargs):
        asked.update(signature.bind(*args, **kwargs).arguments)
        return yahoo.prices

    class History:
        """Stand-in for `yf.Ticker(t)`: only its documented `splits` Series."""

        def __init__(self, ticker: str) -> None:
            self.splits = yahoo.splits[ticker]

    monkeypatch.setattr(yf, "download", download)
    monkeypatch.setattr(yf, "Ticker", History)
    req = PullRequest(
        source="yfinance", out=tmp_path / "yf", start=START, end=END, symbols=TICKERS, index="SPY"
    )
    pull_dataset(req)
    ds = load_dataset(req.out)
    assert asked["tickers"] == [*TICKERS, "SPY"]
    assert (asked["start"], asked["end"]) == (START, "2022-12-31")  # Yahoo's end is exclusive
    assert (asked["auto_adjust"], asked["actions"], asked["group_by"]) == (False, True, "column")
    assert set(ds.bars["symbol"]) == set(TICKERS) and ds.manifest.index_symbol == "SPY"
    nvda = ds.bars[(ds.bars["symbol"] == "NVDA") & (ds.bars["date"] == "2021-07-19")]
    want = yahoo.prices[("Close", "NVDA")].loc["2021-07-19"] * 40
    assert nvda["close"].iloc[0] == pytest.approx(want, rel=1e-12)
