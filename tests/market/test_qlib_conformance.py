"""Our broker against Qlib 0.9.7's `Exchange`, on the same orders over real A-share data.

30 real names (18 main-board names with many limit days, 4 with suspensions, 4 blue chips,
4 ChiNext/STAR names), 2024-09-02 .. 2024-11-29 (the September rally and the October
limit days), exported to a Qlib folder with `export_qlib`. Every day, every name gets the
same six orders on both sides, each on a fresh account (CNY 200,000 cash; sells hold 1,050
shares bought earlier): BUY 100 / 700 / 4,000 shares, SELL 1,050 (all, an odd lot) / 500 /
250. Qlib is driven through `Exchange.deal_order` with `deal_price="open"`, 5/15 bps,
CNY 5 minimum, 100-share lots and a 0.095 limit threshold.

Each case falls into one category (first that applies); `same_rules` must agree exactly
(fill or not, shares, raw price, cost), the others are the documented differences
(docs/backtest.md, "Conformance with Qlib"):
- `suspended`: both refuse (Qlib sees the NaN close the exporter writes).
- `one_sided`: a day locked at a limit (open == high == low); we refuse both sides.
- `limit_definition`: main board, where the open-vs-previous-close test (ours) and the
  close-to-close `$change` test (Qlib) classify the day differently.
- `board_threshold`: ChiNext/STAR days that either side's limit test flags; Qlib applies
  one ±9.5% threshold to every board, we apply ±19.5% there.
- `odd_lot_sell`: selling 250 of 1,050 on a day without a limit; Qlib rounds down to 200,
  we reject (LOT_SIZE).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tradebench.data import load_dataset
from tradebench.data.dataset import Dataset
from tradebench.data.exporters.qlib import QlibExport, export_qlib
from tradebench.data.importers.long import LongImport, import_long
from tradebench.market.broker import DayQuotes, ExecutionContext, execute_orders
from tradebench.market.ledger import Account
from tradebench.market.orders import Order, RejectCode, Side
from tradebench.market.rules import MarketRules
from tradebench.runs.broker.engine import day_quotes

pytest.importorskip(
    "qlib", reason="pyqlib is not installed (optional extra `qlib`); the Qlib check needs it"
)

SYMBOLS = (
    # main board, many limit days in the window
    *("SH600340", "SH601727", "SH601162", "SH601933", "SH601828", "SZ000066", "SZ002146"),
    *("SZ002456", "SH600390", "SZ000750", "SZ000415", "SZ000402", "SH601360", "SH600221"),
    *("SZ002797", "SH603185", "SZ002459", "SH600895"),
    # suspended on some days of the window
    *("SH601211", "SH600150", "SH600482", "SZ002064"),
    # blue chips (Moutai's price exercises the cash cut)
    *("SH600519", "SH601318", "SZ000001", "SH600036"),
    # ChiNext and STAR (±20% boards)
    *("SZ300033", "SZ300059", "SZ300750", "SH688981"),
)
START, END = "2024-09-02", "2024-11-29"
THRESHOLD = 0.095
CASH = 200_000.0
HELD = 1_050
ORDERS: tuple[tuple[Side, int], ...] = (
    ("BUY", 100),
    ("BUY", 700),
    ("BUY", 4_000),
    ("SELL", HELD),
    ("SELL", 500),
    ("SELL", 250),
)
EXCHANGE_KWARGS = {
    "freq": "day",
    "deal_price": "open",
    "open_cost": 0.0005,
    "close_cost": 0.0015,
    "min_cost": 5.0,
    "trade_unit": 100,
    "limit_threshold": THRESHOLD,
}


@dataclass(frozen=True)
class World:
    """Our dataset (2024-08 .. 2024-12) and Qlib's exchange over the exported window."""

    dataset: Dataset
    exchange: Any
    days: np.ndarray


@pytest.fixture(scope="module")
def world(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> World:
    """Import the subset, export the window to a Qlib folder and open Qlib's exchange."""
    import qlib
    from qlib.backtest.exchange import Exchange

    tmp = tmp_path_factory.mktemp("qlib_conf")
    import_long(
        LongImport(
            source=shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
            out=tmp / "ds",
            market="cn",
            symbols=SYMBOLS,
            start="2024-08-01",
            end="2024-12-31",
        )
    )
    ds = load_dataset(tmp / "ds")
    export_qlib(ds, QlibExport(out=tmp / "qlib", start=START, end=END, membership_universe=None))
    qlib.init(provider_uri=str(tmp / "qlib"), region="cn", kernels=1, logging_level="WARNING")
    exchange = Exchange(start_time=START, end_time=END, codes=list(SYMBOLS), **EXCHANGE_KWARGS)
    dates = ds.panel.dates
    days = np.flatnonzero((dates >= np.datetime64(START)) & (dates <= np.datetime64(END)))
    return World(dataset=ds, exchange=exchange, days=days)


def _ours(side: Side, shares: int, symbol: str, quotes: DayQuotes) -> dict:
    """One order through our broker on a fresh account."""
    account = Account(CASH)
    if side == "SELL":
        account.record_buy(symbol, HELD, 0.0, 0.0, t_plus_one=True)
        account.unlock()
    ctx = ExecutionContext(MarketRules.cn(CASH), nav_prev=CASH, universe=frozenset(SYMBOLS))
    order = Order(stock_id=symbol, side=side, shares=shares)
    record = execute_orders([order], account, quotes, ctx)[0]
    return {
        "ours_shares": record.filled_shares,
        "ours_price": record.fill_price or np.nan,
        "ours_cost": record.cost,
        "ours_code": record.reject_code.value if record.reject_code else "",
    }


def _qlib(
    exchange: Any, side: Side, shares: int, symbol: str, day: pd.Timestamp, factor: float
) -> dict:
    """The same order through Qlib's exchange; amounts and prices converted to raw terms."""
    from qlib.backtest.decision import Order as QOrder
    from qlib.backtest.decision import OrderDir
    from qlib.backtest.position import Position

    held = {symbol: {"amount": HELD / factor, "price": 1.0}} if side == "SELL" else {}
    position = Position(cash=CASH, position_dict=held)
    direction = OrderDir.BUY if side == "BUY" else OrderDir.SELL
    order = QOrder(symbol, shares / factor, direction, day, day)
    _, cost, price = exchange.deal_order(order, position=position)
    qf = order.factor or np.nan
    return {
        "q_shares": round(order.deal_amount * qf) if order.deal_amount > 0 else 0,
        "q_price": price / qf if order.deal_amount > 0 else np.nan,
        "q_cost": cost,
        "q_suspended": bool(exchange.check_stock_suspended(symbol, day, day)),
        "q_limited": bool(exchange.check_stock_limit(symbol, day, day, direction)),
    }


def _day_context(world: World, t: int, marks: np.ndarray) -> tuple[DayQuotes, pd.DataFrame]:
    """Day t's quotes and, per symbol, the limit classes of both definitions."""
    panel = world.dataset.panel
    q = day_quotes(panel, t, marks)
    day = pd.Timestamp(panel.dates[t])
    change = world.exchange.quote_df.xs(day, level="datetime")["$change"]
    ref, eps = q.ref_close, 1e-9 * q.ref_close
    frame = pd.DataFrame(
        {
            "symbol": panel.symbols,
            "main": np.isin(panel.boards, ("main_sh", "main_sz")),
            "o_up": q.open >= ref * (1 + THRESHOLD) - eps,
            "o_down": q.open <= ref * (1 - THRESHOLD) + eps,
            "locked": (q.open == q.high) & (q.high == q.low),
            "suspended": q.suspended,
            "factor": panel.fields["adj_factor"][t],
        }
    )
    c = change.reindex(frame["symbol"]).to_numpy(dtype=float)
    frame["c_up"], frame["c_down"] = c >= THRESHOLD, c <= -THRESHOLD
    return q, frame


def _category(row: pd.Series, side: Side, shares: int) -> str:
    """The first category (module docstring) that applies to a case."""
    if row["suspended"] or row["q_suspended"]:
        return "suspended"
    moved = row["o_up"] or row["o_down"]
    if row["locked"] and moved:
        return "one_sided"
    disagree = row["o_up"] != row["c_up"] or row["o_down"] != row["c_down"]
    if row["main"] and disagree:
        return "limit_definition"
    if not row["main"] and (moved or row["c_up"] or row["c_down"]):
        return "board_threshold"
    if side == "SELL" and shares % 100 and shares != HELD and not row["q_limited"]:
        return "odd_lot_sell"
    return "same_rules"


@pytest.fixture(scope="module")
def results(world: World) -> pd.DataFrame:
    """One row per (day, symbol, order): both sides' outcomes and the case's category."""
    panel = world.dataset.panel
    marks = pd.DataFrame(panel.fields["close"]).ffill().to_numpy()
    rows = []
    for t in world.days:
        quotes, ctx = _day_context(world, int(t), marks)
        day = pd.Timestamp(panel.dates[t])
        for rec in ctx.to_dict("records"):
            for side, shares in ORDERS:
                row = {"date": day, "side": side, "shares": shares, **rec}
                row |= _ours(side, shares, rec["symbol"], quotes)
                row |= _qlib(world.exchange, side, shares, rec["symbol"], day, rec["factor"])
                row["category"] = _category(pd.Series(row), side, shares)
                rows.append(row)
    return pd.DataFrame(rows)


def _blocked(frame: pd.DataFrame) -> pd.Series:
    codes = {RejectCode.LIMIT_UP.value, RejectCode.LIMIT_DOWN.value}
    return frame["ours_code"].isin(codes)


def test_suspensions_agree(results: pd.DataFrame) -> None:
    assert (results["suspended"] == results["q_suspended"]).all()
    susp = results[results["category"] == "suspended"]
    assert susp["symbol"].nunique() >= 4 and len(susp) > 0
    assert (susp["ours_code"] == RejectCode.SUSPENDED.value).all()
    assert (susp["q_shares"] == 0).all() and (susp["ours_shares"] == 0).all()


def test_same_rules_fill_identically(results: pd.DataFrame) -> None:
    """Fill or not, shares, raw fill price (the raw open) and cost with the CNY 5 minimum."""
    same = results[results["category"] == "same_rules"]
    assert len(same) > 5_000
    assert ((same["ours_shares"] > 0) == (same["q_shares"] > 0)).all()
    both = same[same["ours_shares"] > 0]
    assert (both["ours_shares"] == both["q_shares"]).all()
    np.testing.assert_allclose(both["q_price"], both["ours_price"], rtol=2e-7)
    np.testing.assert_allclose(both["q_cost"], both["ours_cost"], rtol=2e-7)
    # the comparison is not vacuous: minimum costs, cash cuts, odd-lot full sells
    assert (both["ours_cost"] == 5.0).sum() > 500
    cut = both[(both["side"] == "BUY") & (both["ours_shares"] < both["shares"])]
    assert len(cut) > 100 and (cut["ours_shares"] % 100 == 0).all()
    assert ((both["side"] == "SELL") & (both["ours_shares"] == HELD)).sum() > 500


def test_main_board_limits_agree_where_definitions_coincide(results: pd.DataFrame) -> None:
    main = results[results["main"] & (results["category"] == "same_rules")]
    assert (_blocked(main) == main["q_limited"]).all()
    assert _blocked(main).sum() > 50  # real limit days are compared, both sides
    assert set(main.loc[_blocked(main), "side"]) == {"BUY", "SELL"}


def test_known_differences(results: pd.DataFrame) -> None:
    """Each documented difference shows up and behaves as docs/backtest.md says."""
    cat = results["category"]
    odd = results[(cat == "odd_lot_sell")]
    assert (odd["ours_code"] == RejectCode.LOT_SIZE.value).all() and (odd["q_shares"] == 200).all()
    locked = results[cat == "one_sided"]
    assert (locked["ours_code"] == RejectCode.ONE_SIDED.value).all()
    up_sells = locked[locked["o_up"] & (locked["side"] == "SELL")]
    assert len(up_sells) > 0 and (up_sells["q_shares"] > 0).all()
    definition = results[cat == "limit_definition"]
    assert (_blocked(definition) != definition["q_limited"]).sum() > 50
    boards = results[cat == "board_threshold"]
    assert (boards["q_limited"] & (boards["ours_shares"] > 0)).sum() > 0


def test_qlib_has_no_t_plus_one(world: World) -> None:
    """Qlib sells shares bought the same day; our broker refuses them (T1_LOCKED)."""
    from qlib.backtest.decision import Order as QOrder
    from qlib.backtest.decision import OrderDir
    from qlib.backtest.position import Position

    day, symbol = pd.Timestamp("2024-09-03"), "SH600036"
    position = Position(cash=CASH)
    buy = QOrder(symbol, 1_000.0, OrderDir.BUY, day, day)
    world.exchange.deal_order(buy, position=position)
    sell = QOrder(symbol, buy.deal_amount, OrderDir.SELL, day, day)
    world.exchange.deal_order(sell, position=position)
    assert buy.deal_amount > 0 and sell.deal_amount == buy.deal_amount
    panel = world.dataset.panel
    t = int(np.searchsorted(panel.dates, np.datetime64("2024-09-03")))
    quotes = day_quotes(panel, t, pd.DataFrame(panel.fields["close"]).ffill().to_numpy())
    ctx = ExecutionContext(MarketRules.cn(CASH), nav_prev=CASH, universe=frozenset(SYMBOLS))
    orders = [
        Order(stock_id=symbol, side="BUY", shares=100),
        Order(stock_id=symbol, side="SELL", shares=100),
    ]
    records = execute_orders(orders, Account(CASH), quotes, ctx)
    assert records[0].status == "filled" and records[1].reject_code == RejectCode.T1_LOCKED


def test_summary(results: pd.DataFrame) -> None:
    """Counts per category (printed with `-s`; the figures in docs/backtest.md)."""
    agree = (results["ours_shares"] > 0) == (results["q_shares"] > 0)
    table = results.assign(agree=agree).groupby("category")["agree"].agg(["size", "sum"])
    print("\n", table.rename(columns={"size": "cases", "sum": "same fill decision"}))
    assert table["size"].sum() == results["date"].nunique() * len(SYMBOLS) * len(ORDERS)
