"""The columnar account keeps the dict-of-holdings behaviour its callers rely on.

Oracle: the rules as stated in `market.ledger` (a closed position disappears, T+1 locks
a buy until `unlock`, `holdings` writes go through) checked by hand on small books.
"""

from __future__ import annotations

import numpy as np

from tradebench.market.ledger import Account, Holding

COLUMN = {"SH600000": 0, "SH600519": 1, "SZ000001": 2, "SZ300750": 3}
CLOSE = np.array([10.0, 1500.0, 12.0, 200.0])


def test_holdings_are_sorted_and_closed_positions_disappear() -> None:
    a = Account(100_000.0)
    a.record_buy("SZ300750", 100, 200.0, 5.0, t_plus_one=True)
    a.record_buy("SH600000", 300, 10.0, 5.0, t_plus_one=True)
    assert list(a.holdings) == ["SH600000", "SZ300750"]
    assert a.cash == 100_000.0 - (100 * 200.0 + 5.0) - (300 * 10.0 + 5.0)
    assert (a.shares("SH600000"), a.available("SH600000")) == (300, 0)  # T+1
    a.unlock()
    a.record_sell("SH600000", 300, 11.0, 5.0)
    assert list(a.holdings) == ["SZ300750"] and a.shares("SH600000") == 0
    a.record_buy("SH600000", 100, 10.0, 5.0, t_plus_one=False)  # reopened, US-style
    assert a.holdings["SH600000"] == Holding(100, 100)


def test_holdings_write_through_and_assign() -> None:
    a = Account(0.0)
    a.record_buy("SH600519", 200, 0.0, 0.0, t_plus_one=True)
    a.holdings["SH600519"].available = 50  # what the research tools do on a copy
    assert a.available("SH600519") == 50
    a.holdings = {"SZ000001": Holding(700, 300), "SH600000": Holding(100, 100)}
    assert a.holdings == {"SH600000": Holding(100, 100), "SZ000001": Holding(700, 300)}
    assert a.shares("SH600519") == 0


def test_book_snapshot_and_marks_agree() -> None:
    a = Account(1_000.0)
    for symbol, n in (("SZ300750", 100), ("SH600519", 100), ("SH600000", 1_000)):
        a.record_buy(symbol, n, 0.0, 0.0, t_plus_one=True)
    book = a.book(COLUMN)
    assert book.symbols == ["SH600000", "SH600519", "SZ300750"]
    assert book.cols.tolist() == [0, 1, 3] and book.available.tolist() == [0, 0, 0]
    nav = 1_000.0 + 1_000 * 10.0 + 100 * 1500.0 + 100 * 200.0
    assert a.nav(CLOSE, COLUMN) == nav
    snap = a.snapshot(CLOSE, COLUMN)
    assert snap.nav == nav and snap.symbols == tuple(book.symbols)
    assert [p.weight for p in snap.positions] == [10_000 / nav, 150_000 / nav, 20_000 / nav]
    assert snap.holding("SH600519").shares == 100 and snap.holding("SZ000001") is None
    held, available = a.positions_of(["SZ000001", "SH600519", "XX"])
    assert held.tolist() == [0, 100, 0] and available.tolist() == [0, 0, 0]
