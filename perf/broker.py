"""The broker's two paths side by side: per-order against arrays (`market.batch`).

On one real CSI300 day (2024-06-03), an account holding 200 members; n orders on distinct
symbols, half sells of 300 shares, half buys of 200. Each path runs the same list on a
fresh copy of the account; the CPU time per step (median of `--repeats` blocks of 200
steps) is printed for each n, with the records checked equal. `BATCH_MIN_ORDERS` in
`market.broker` is set near the break-even this prints.
Run: `python perf/broker.py [--repeats N]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import REPEATS, import_real_cn

from tradebench.data import load_dataset
from tradebench.market.batch import execute_batch
from tradebench.market.broker import BATCH_MIN_ORDERS, ExecutionContext
from tradebench.market.ledger import Account
from tradebench.market.orders import Order
from tradebench.market.rules import MarketRules
from tradebench.market.single import execute_one
from tradebench.runs.broker.engine import _filled_close, day_quotes
from tradebench.view import MarketView

DAY = "2024-06-03"
STEPS = 200


def _account(members: list[str]) -> Account:
    account = Account(1_000_000.0)
    for symbol in members[:200]:
        account.record_buy(symbol, 1_000, 0.0, 0.0, t_plus_one=False)
    return account


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed blocks (>= 3)")
    repeats = max(parser.parse_args().repeats, 3)
    with tempfile.TemporaryDirectory() as tmp:
        ds = load_dataset(import_real_cn(Path(tmp) / "cn", start="2024-01-01", end="2024-12-31"))
    panel = ds.panel
    t = int(np.searchsorted(panel.dates, np.datetime64(DAY)))
    quotes = day_quotes(panel, t, _filled_close(panel))
    members = MarketView(panel, panel.dates[t], market="cn").members().tolist()
    ctx = ExecutionContext(MarketRules.cn(), 1_000_000.0, frozenset(members))
    print(f"BATCH_MIN_ORDERS = {BATCH_MIN_ORDERS}; CPU time per step, median of {repeats}")
    for n in (1, 5, 10, 20, 40, 50, 100, 300):
        sells = [Order(stock_id=s, side="SELL", shares=300) for s in members[: n // 2]]
        buys = [Order(stock_id=s, side="BUY", shares=200) for s in members[200 : 200 + n - n // 2]]
        orders = sells + buys
        symbols = [o.stock_id for o in orders]
        per_order, arrays = [], []
        for _ in range(repeats):
            accounts = [_account(members) for _ in range(STEPS)]
            start = time.process_time()
            expected = [[execute_one(o, a, quotes, ctx) for o in orders] for a in accounts]
            per_order.append((time.process_time() - start) / STEPS)
            accounts = [_account(members) for _ in range(STEPS)]
            start = time.process_time()
            got = [execute_batch(orders, symbols, a, quotes, ctx) for a in accounts]
            arrays.append((time.process_time() - start) / STEPS)
            assert got == expected
        a, b = statistics.median(per_order) * 1e6, statistics.median(arrays) * 1e6
        print(f"{n:>4} orders: per-order {a:8.1f} us, arrays {b:8.1f} us ({a / b:.2f}x)")


if __name__ == "__main__":
    main()
