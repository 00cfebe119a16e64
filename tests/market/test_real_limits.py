"""Board price limits and the ex-dividend limit reference, on real CSI300 bars (2023-2024).

The oracle is written here, not read from the code under test:
- the threshold of each board, by the symbol's code prefix, as literals: main board
  (`SH60`, `SZ00`) ±9.5%, ChiNext (`SZ30`) and STAR (`SH688`) ±19.5%, Beijing (`BJ8`,
  `BJ4`) ±29.5% of the reference close;
- the reference close of day t, from the shared source file itself (back-adjusted prices,
  raw = price / factor on the 0.01 tick): raw close[t-1] x factor[t-1] / factor[t], i.e.
  T-1's close restated in T's share terms after a dividend or bonus issue.

The engine side is the real one: the dataset's panel (`limit_threshold`), the engine's
`day_quotes`, the broker's `execute_orders` under `MarketRules.cn()`, and `run_backtest`
with a scripted agent for the worked days.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.agents.protocol import Decision, StepInfo
from tradebench.data import Dataset, load_dataset
from tradebench.data.boards import limit_arrays
from tradebench.market.broker import DayQuotes, ExecutionContext, execute_orders
from tradebench.market.ledger import Account, AccountSnapshot
from tradebench.market.orders import Action, Order, RejectCode, Side
from tradebench.market.rules import MarketRules
from tradebench.runs.broker.engine import day_quotes, run_backtest_sync
from tradebench.view import MarketView

ORACLE_THRESHOLD = (
    ("SH688", 0.195),  # STAR (checked before the SH60 main-board prefix it does not share)
    ("SH60", 0.095),
    ("SZ00", 0.095),
    ("SZ30", 0.195),  # ChiNext
    ("BJ8", 0.295),
    ("BJ4", 0.295),
)
MARGIN = 1e-3
"""Cells whose open lies within 0.1% of a threshold are left to the hand-built tick tests
(tests/market/test_broker_rules.py); float32 source prices make the exact edge fuzzy."""


def oracle_threshold(symbol: str) -> float:
    """The exchange rule for a code (engine threshold, a fraction of the reference close)."""
    for prefix, threshold in ORACLE_THRESHOLD:
        if symbol.startswith(prefix):
            return threshold
    raise AssertionError(f"{symbol}: not an A-share code this oracle knows")


@dataclass(frozen=True)
class SourceBars:
    """The shared file's bars as raw prices, on the panel's calendar and columns (T, N)."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    factor: np.ndarray
    trades: np.ndarray
    """A bar with volume > 0 on that day and on the day before (not suspended, listed)."""

    def reference(self) -> np.ndarray:
        """Limit reference per day: raw close[t-1] x factor[t-1] / factor[t] (NaN at t=0)."""
        ref = np.full_like(self.close, np.nan)
        ref[1:] = self.close[:-1] * self.factor[:-1] / self.factor[1:]
        return ref

    def raw_previous_close(self) -> np.ndarray:
        """Raw close of t-1 with no adjustment (what an unadjusted reference would use)."""
        prev = np.full_like(self.close, np.nan)
        prev[1:] = self.close[:-1]
        return prev


@pytest.fixture(scope="module")
def cn(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


@pytest.fixture(scope="module")
def source(shared_data: Path, cn: Dataset) -> SourceBars:
    """Raw bars straight from the shared parquet, aligned to the panel by date and symbol."""
    frame = pd.read_parquet(shared_data / "cn" / "csi300_members_daily_2018_2026.parquet")
    frame = frame[(frame["date"] >= "2023-01-01") & (frame["date"] <= "2024-12-31")]
    dates = pd.DatetimeIndex(cn.panel.dates.astype("datetime64[ns]"))
    symbols = [str(s) for s in cn.panel.symbols]

    def wide(column: str) -> np.ndarray:
        table = frame.pivot(index="date", columns="symbol", values=column)
        table.columns = table.columns.astype(str)
        return table.reindex(index=dates, columns=symbols).to_numpy(dtype=np.float64)

    factor = wide("factor")
    raw = {k: np.round(wide(k) / factor, 2) for k in ("open", "high", "low", "close")}
    volume = np.nan_to_num(wide("volume"))
    trades = np.zeros(volume.shape, dtype=bool)
    trades[1:] = (volume[1:] > 0) & (volume[:-1] > 0)
    return SourceBars(factor=factor, trades=trades, **raw)


def _marks(ds: Dataset) -> np.ndarray:
    """Raw closes forward-filled down each column, as the engine marks holdings."""
    return pd.DataFrame(ds.panel.fields["close"]).ffill().to_numpy()


def _held(symbol: str, shares: int = 100) -> Account:
    """An account holding `shares` of `symbol`, all sellable today."""
    account = Account(1_000_000.0)
    account.record_buy(symbol, shares, 10.0, 5.0, t_plus_one=False)
    return account


def _one(side: Side, symbol: str, quotes: DayQuotes, ctx: ExecutionContext) -> RejectCode | None:
    """Reject code of a 100-share order (None = filled) on a fresh account."""
    account = Account(1_000_000.0) if side == "BUY" else _held(symbol)
    [record] = execute_orders([Order(stock_id=symbol, side=side, shares=100)], account, quotes, ctx)
    assert record.status in ("filled", "rejected"), record
    return record.reject_code


@dataclass
class Scripted:
    """Sends the orders listed for a day (ISO date -> orders), nothing otherwise."""

    orders: dict[str, list[Order]]
    name: str = "scripted"

    async def decide(self, view: MarketView, account: AccountSnapshot, step: StepInfo) -> Decision:
        return Decision(action=Action(orders=self.orders.get(str(view.as_of), [])))


def test_panel_threshold_follows_the_board_of_every_real_symbol(cn: Dataset) -> None:
    """The engine's per-column threshold is the oracle's for every real symbol's code."""
    panel = cn.panel
    symbols = [str(s) for s in panel.symbols]
    expected = np.array([oracle_threshold(s) for s in symbols])
    np.testing.assert_array_equal(panel.limit_threshold, expected)
    wide = sum(s.startswith(("SZ30", "SH688")) for s in symbols)
    assert wide >= 80 and len(symbols) - wide >= 400  # both kinds of board are exercised
    assert MarketView(cn, "2024-10-08").limit_threshold[panel.column("SZ300750")] == 0.195


def test_beijing_codes_get_thirty_percent_boards() -> None:
    """No Beijing bars exist in the shared data, so the code path the panel is built with
    (`limit_arrays`) and the rules the prompts state are checked on Beijing codes."""
    codes = np.array(["BJ830799", "BJ430047", "SZ300750", "SH688981", "SH600519"], dtype=object)
    _, threshold = limit_arrays(codes, "cn")
    np.testing.assert_array_equal(threshold, [oracle_threshold(str(c)) for c in codes])
    stated = MarketRules.cn().limit_thresholds()
    assert stated["beijing"] == 0.295 and stated["chinext"] == stated["star"] == 0.195
    assert stated["main_sh"] == stated["main_sz"] == 0.095


def test_twenty_percent_boards_fill_above_ten_percent_on_a_real_day(
    cn: Dataset, source: SourceBars
) -> None:
    """2024-10-08 (after the National Day holiday): CATL (ChiNext) opened +17.5% and
    SH688271 (STAR) +18.75% over the previous close, inside their ±20% limits, so a BUY
    fills; China Merchants Bank (main board) opened +9.997%, past ±9.5%: LIMIT_UP."""
    day = "2024-10-08"
    t = int(np.searchsorted(cn.panel.dates, np.datetime64(day)))
    ref = source.reference()[t]
    for symbol, lo, hi in (("SZ300750", 0.10, 0.195), ("SH688271", 0.10, 0.195)):
        j = cn.panel.column(symbol)
        assert lo < source.open[t, j] / ref[j] - 1 < hi
        assert source.low[t, j] < source.open[t, j]  # traded off the open: not one-sided
    j = cn.panel.column("SH600036")
    assert 0.095 < source.open[t, j] / ref[j] - 1 < 0.10
    assert source.low[t, j] < source.open[t, j]
    buys = [Order(stock_id=s, side="BUY", shares=100) for s in ("SZ300750", "SH688271")]
    buys.append(Order(stock_id="SH600036", side="BUY", shares=100))
    result = run_backtest_sync(cn, Scripted({day: buys}), day, day)
    orders = result.orders.set_index("symbol")
    assert orders.loc["SZ300750", "status"] == "filled"
    assert orders.loc["SH688271", "status"] == "filled"
    assert orders.loc["SZ300750", "fill_price"] == pytest.approx(296.00)
    assert orders.loc["SH688271", "fill_price"] == pytest.approx(152.00)
    assert orders.loc["SH600036", "status"] == "rejected"
    assert orders.loc["SH600036", "reject_code"] == RejectCode.LIMIT_UP.value


def test_every_real_open_past_a_limit_is_refused_and_inside_it_fills(
    cn: Dataset, source: SourceBars
) -> None:
    """All real days whose open gapped more than 9.5% from the reference close: the broker
    refuses exactly those past the board's oracle threshold (LIMIT_UP for a BUY on the way
    up, LIMIT_DOWN for a SELL on the way down, ONE_SIDED when locked), fills the rest."""
    panel, marks = cn.panel, _marks(cn)
    expected = np.array([oracle_threshold(str(s)) for s in panel.symbols])
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = source.open / source.reference() - 1
    edge = np.abs(np.abs(gap) - expected) < MARGIN
    cells = source.trades & np.isfinite(gap) & (np.abs(gap) > 0.095 + MARGIN) & ~edge
    ctx = ExecutionContext(MarketRules.cn(), 1_000_000.0, frozenset(map(str, panel.symbols)))
    seen = {"wide_inside": 0, "wide_past": 0, "main_past": 0}
    for t in np.unique(np.nonzero(cells)[0]):
        quotes = day_quotes(panel, int(t), marks)
        for j in np.flatnonzero(cells[t]):
            symbol, g, limit = str(panel.symbols[j]), gap[t, j], expected[j]
            locked = source.open[t, j] == source.high[t, j] == source.low[t, j]
            side: Side = "BUY" if g > 0 else "SELL"
            if abs(g) < limit:
                want = None
                seen["wide_inside"] += 1
            else:
                want = (
                    RejectCode.ONE_SIDED
                    if locked
                    else (RejectCode.LIMIT_UP if g > 0 else RejectCode.LIMIT_DOWN)
                )
                seen["wide_past" if limit > 0.1 else "main_past"] += 1
            got = _one(side, symbol, quotes, ctx)
            assert got == want, (symbol, str(panel.dates[t]), side, round(g, 4), limit)
    assert seen["wide_inside"] >= 50  # ChiNext/STAR opens 9.5-19.5% away that must fill
    assert seen["main_past"] >= 200 and seen["wide_past"] >= 10


def test_ex_dividend_reference_is_the_adjusted_previous_close(
    cn: Dataset, source: SourceBars
) -> None:
    """On every real ex-date (the factor changes between t-1 and t) the engine's limit
    reference is raw close[t-1] x factor[t-1] / factor[t] from the source file, which is
    not the raw previous close."""
    panel, marks = cn.panel, _marks(cn)
    ref, raw_prev = source.reference(), source.raw_previous_close()
    with np.errstate(invalid="ignore"):
        moved = np.abs(source.factor[1:] / source.factor[:-1] - 1) > 1e-4
    ex = np.zeros_like(source.trades)
    ex[1:] = moved
    ex &= source.trades
    checked = 0
    for t in np.unique(np.nonzero(ex)[0]):
        quotes = day_quotes(panel, int(t), marks)
        cols = np.flatnonzero(ex[t])
        np.testing.assert_allclose(quotes.ref_close[cols], ref[t, cols], rtol=1e-6)
        np.testing.assert_allclose(quotes.prev_close[cols], raw_prev[t, cols], rtol=1e-6)
        assert (np.abs(quotes.ref_close[cols] / raw_prev[t, cols] - 1) > 5e-5).all()
        checked += cols.size
    assert checked >= 500


def test_ex_dividend_sell_is_judged_against_the_adjusted_close(
    cn: Dataset, source: SourceBars
) -> None:
    """COSCO Shipping (SH601919) went ex-dividend on 2023-06-28: raw close 10.87 the day
    before, reference 9.48 after the dividend, open 9.50. Against the raw 10.87 the open
    would be a 12.6% drop (LIMIT_DOWN); against the reference it is +0.2%, so a SELL fills.
    The same holds on every real ex-date where the two references disagree."""
    symbol, buy_day, ex_day = "SH601919", "2023-06-26", "2023-06-28"
    panel = cn.panel
    t, j = int(np.searchsorted(panel.dates, np.datetime64(ex_day))), panel.column(symbol)
    ref, raw_prev = source.reference()[t, j], source.raw_previous_close()[t, j]
    assert raw_prev == pytest.approx(10.87) and ref == pytest.approx(9.48, abs=0.005)
    assert source.open[t, j] == pytest.approx(9.50)
    assert source.open[t, j] <= raw_prev * (1 - 0.095)  # an unadjusted reference refuses
    assert source.open[t, j] > ref * (1 - 0.095)
    script = {
        buy_day: [Order(stock_id=symbol, side="BUY", shares=1000)],
        ex_day: [Order(stock_id=symbol, side="SELL", shares=1000)],
    }
    result = run_backtest_sync(cn, Scripted(script), buy_day, ex_day)
    sell = result.orders[result.orders["side"] == "SELL"].iloc[0]
    assert sell["status"] == "filled", sell["message"]
    assert sell["fill_price"] == pytest.approx(9.50)

    marks = _marks(cn)
    ctx = ExecutionContext(MarketRules.cn(), 1_000_000.0, frozenset(map(str, panel.symbols)))
    limit = np.array([oracle_threshold(str(s)) for s in panel.symbols])
    with np.errstate(invalid="ignore", divide="ignore"):
        by_ref = source.open / source.reference() - 1
        by_raw = source.open / source.raw_previous_close() - 1
    split = source.trades & (by_raw <= -limit - MARGIN) & (by_ref > -limit + MARGIN)
    split &= source.low < source.high
    assert split.sum() >= 30
    for t, j in zip(*np.nonzero(split), strict=True):
        code = _one("SELL", str(panel.symbols[j]), day_quotes(panel, int(t), marks), ctx)
        assert code is None, (str(panel.symbols[j]), str(panel.dates[t]), code)
