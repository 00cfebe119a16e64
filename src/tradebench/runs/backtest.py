"""Run one agent over a window: decide before the open, fill at the open, mark at the close.

The environment side (this loop and the broker) reads day T's quotes from the panel; the
agent only ever receives a `MarketView` at T and an `AccountSnapshot` at T-1's close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tradebench.agents.protocol import Agent, Decision, StepInfo
from tradebench.data.dataset import Dataset
from tradebench.data.panel import Panel
from tradebench.errors import ConfigError
from tradebench.market.broker import DayQuotes, ExecutionContext, execute_orders
from tradebench.market.distributions import distribute
from tradebench.market.ledger import Account
from tradebench.market.orders import OrderRecord
from tradebench.market.rules import MarketRules
from tradebench.runs.checkpoint import Checkpoint, Restored
from tradebench.view import MarketView, to_day

STEP_COLUMNS = [
    "date",
    "nav",
    "cash",
    "benchmark_close",
    "n_orders",
    "n_rejected",
    "turnover",
    "parse_failures",
    "tool_calls",
    "tool_calls_valid",
    "retries",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "distributions",
]
ORDER_COLUMNS = [
    "date",
    "symbol",
    "side",
    "requested_shares",
    "target_weight",
    "filled_shares",
    "fill_price",
    "cost",
    "status",
    "reject_code",
    "message",
    "confidence",
    "reason",
    "stock_id_sent",
    "outcome",
]
POSITION_COLUMNS = ["date", "symbol", "shares", "shares_available", "close", "weight"]


@dataclass(frozen=True)
class BacktestResult:
    """The three step-record tables of a run plus what produced them."""

    steps: pd.DataFrame
    positions: pd.DataFrame
    orders: pd.DataFrame
    initial_cash: float
    benchmark_start: float | None


def trading_days(panel: Panel, start: str, end: str) -> np.ndarray:
    """Indices of the calendar's trading days in [start, end]."""
    lo, hi = to_day(start), to_day(end)
    idx = np.flatnonzero((panel.dates >= lo) & (panel.dates <= hi))
    if idx.size == 0:
        raise ConfigError(
            f"no trading days between {start} and {end} in this dataset "
            f"({panel.dates[0]} .. {panel.dates[-1]})"
        )
    if idx[0] == 0:
        raise ConfigError(
            f"{start} is the dataset's first day: a decision needs one day of "
            "history; start one trading day later"
        )
    return idx


def _filled_close(panel: Panel) -> np.ndarray:
    """Raw closes forward-filled down each column (marks holdings of delisted names)."""
    frame = pd.DataFrame(panel.fields["close"])
    return frame.ffill().to_numpy()


def day_quotes(panel: Panel, t: int, marks: np.ndarray) -> DayQuotes:
    """Day t's raw quotes and limit references from the panel (environment side)."""
    f = panel.fields
    prev_close = marks[t - 1]
    ratio = f["adj_factor"][t - 1] / f["adj_factor"][t]
    return DayQuotes(
        open=f["open"][t],
        high=f["high"][t],
        low=f["low"][t],
        close=marks[t],
        prev_close=prev_close,
        ref_close=np.where(np.isfinite(ratio), prev_close * ratio, prev_close),
        suspended=panel.suspended[t] | ~panel.listed[t],
        threshold=panel.limit_threshold,
        column=panel.column_map,
    )


async def run_backtest(
    dataset: Dataset,
    agent: Agent,
    start: str,
    end: str,
    rules: MarketRules | None = None,
    on_step: Callable[[int, int], None] | None = None,
    checkpoint: Checkpoint | None = None,
) -> BacktestResult:
    """Run `agent` from `start` to `end` (inclusive) under `rules` (market defaults).

    With a `checkpoint`, every completed step is persisted and a rerun continues after
    the last completed step with the restored account.
    """
    panel = dataset.panel
    rules = rules or MarketRules.for_market(dataset.market)
    days = trading_days(panel, start, end)
    marks = _filled_close(panel)
    bench = panel.index["close"]
    bench_start = float(bench[days[0] - 1])
    state = checkpoint.restore() if checkpoint else Restored()
    account = state.account or Account(rules.initial_cash)
    steps, positions, orders = state.steps, state.positions, state.orders
    previous = state.previous
    for i in range(state.steps_done, len(days)):
        t = days[i]
        account.unlock()
        view = MarketView(panel, panel.dates[t], market=dataset.market)
        snapshot = account.snapshot(marks[t - 1], panel.column_map)
        info = StepInfo(
            index=i + 1,
            total=len(days),
            first_day=panel.dates[days[0]],
            previous=previous,
            cum_return=snapshot.nav / rules.initial_cash - 1,
            bench_return=float(bench[t - 1] / bench_start - 1),
        )
        decision = await agent.decide(view, snapshot, info)
        paid = distribute(
            account,
            panel.fields["adj_factor"][t - 1],
            panel.fields["adj_factor"][t],
            marks[t - 1],
            panel.column_map,
        )
        universe = frozenset(view.members().tolist())
        ctx = ExecutionContext(rules=rules, nav_prev=snapshot.nav, universe=universe)
        records = execute_orders(
            list(decision.action.orders), account, day_quotes(panel, t, marks), ctx
        )
        day = pd.Timestamp(panel.dates[t])
        step_row = _step_row(day, account, marks[t], panel, t, decision, records, snapshot.nav)
        step_row.append(
            sum(d.cash + d.shares * float(marks[t][panel.column_map[d.symbol]]) for d in paid)
        )
        pos_rows = _position_rows(day, account, marks[t], panel.column_map)
        order_rows = [_order_row(day, r, _sent(decision, k)) for k, r in enumerate(records)]
        if checkpoint is not None:
            checkpoint.append(step_row, pos_rows, order_rows, account, records, decision.trace, i)
        steps.append(step_row)
        positions += pos_rows
        orders += order_rows
        previous = tuple(records)
        if on_step is not None:
            on_step(i + 1, len(days))
    orders_frame = _with_outcomes(_frame(orders, ORDER_COLUMNS), panel)
    return BacktestResult(
        steps=_frame(steps, STEP_COLUMNS),
        positions=_frame(positions, POSITION_COLUMNS),
        orders=orders_frame,
        initial_cash=rules.initial_cash,
        benchmark_start=bench_start if np.isfinite(bench_start) else None,
    )


def _frame(rows: list[list], columns: list[str]) -> pd.DataFrame:
    """Rows to a frame with a nanosecond `date` column (fresh and restored rows agree)."""
    frame = pd.DataFrame(rows, columns=columns)
    frame["date"] = pd.to_datetime(frame["date"]).astype("datetime64[ns]")
    return frame


def _sent(decision: Decision, k: int) -> str | None:
    ids = decision.sent_ids
    return ids[k] if ids is not None and k < len(ids) else None


def run_backtest_sync(
    dataset: Dataset,
    agent: Agent,
    start: str,
    end: str,
    rules: MarketRules | None = None,
    on_step: Callable[[int, int], None] | None = None,
    checkpoint: Checkpoint | None = None,
) -> BacktestResult:
    """Blocking wrapper of `run_backtest` for scripts and the CLI."""
    return asyncio.run(run_backtest(dataset, agent, start, end, rules, on_step, checkpoint))


def _step_row(
    day: pd.Timestamp,
    account: Account,
    close: np.ndarray,
    panel: Panel,
    t: int,
    decision: Decision,
    records: list[OrderRecord],
    nav_prev: float,
) -> list:
    traded = sum(r.filled_shares * (r.fill_price or 0.0) for r in records)
    return [
        day,
        account.nav(close, panel.column_map),
        account.cash,
        float(panel.index["close"][t]),
        len(records),
        sum(r.status == "rejected" for r in records),
        traded / nav_prev if nav_prev > 0 else 0.0,
        decision.parse_failures,
        decision.tool_calls,
        decision.tool_calls_valid,
        decision.retries,
        decision.tokens_in,
        decision.tokens_out,
        decision.cost_usd,
    ]


def _position_rows(
    day: pd.Timestamp, account: Account, close: np.ndarray, column: dict[str, int]
) -> list[list]:
    symbols, shares, prices = account.marks(close, column)
    nav = account.cash + float(shares @ prices)
    weights = (shares * prices / nav).tolist()
    return [
        [day, s, account.holdings[s].shares, account.holdings[s].available, p, w]
        for s, p, w in zip(symbols, prices.tolist(), weights, strict=True)
    ]


def _order_row(day: pd.Timestamp, r: OrderRecord, sent: str | None) -> list:
    return [
        day,
        r.symbol,
        r.side,
        r.requested_shares,
        r.target_weight,
        r.filled_shares,
        r.fill_price,
        r.cost,
        r.status,
        r.reject_code.value if r.reject_code else None,
        r.message,
        r.confidence,
        r.reason,
        sent,
        None,
    ]


def _with_outcomes(orders: pd.DataFrame, panel: Panel) -> pd.DataFrame:
    """Calibration outcome per filled order: was the call right on the day after the fill?

    BUY is right when the close-to-close adjusted return from the fill day to the next
    trading day is > 0, SELL when < 0; NaN when unfilled or the next day is not in the data.
    """
    if orders.empty:
        return orders
    day = orders["date"].to_numpy().astype("datetime64[D]")
    t = np.searchsorted(panel.dates, day)
    cols = np.array([panel.column(s) for s in orders["symbol"]])
    adj = panel.adjusted["adj_close"]
    ok = (t + 1 < len(panel.dates)) & (cols >= 0) & (orders["filled_shares"].to_numpy() > 0)
    t1 = np.minimum(t + 1, len(panel.dates) - 1)
    ret = np.where(ok, adj[t1, np.maximum(cols, 0)] / adj[t, np.maximum(cols, 0)] - 1, np.nan)
    buy = orders["side"].to_numpy() == "BUY"
    outcome = np.where(buy, ret > 0, ret < 0).astype(float)
    return orders.assign(outcome=np.where(np.isfinite(ret), outcome, np.nan))


def benchmark_result(
    dataset: Dataset, start: str, end: str, initial_cash: float = 1_000_000.0
) -> BacktestResult:
    """The benchmark index as a buy-and-hold reference: scored like a run, never traded.

    NAV = initial cash x index close / index close on the day before the window.
    """
    panel = dataset.panel
    days = trading_days(panel, start, end)
    close = panel.index["close"]
    base = float(close[days[0] - 1])
    if not np.isfinite(base):
        raise ConfigError("the dataset has no benchmark index over this window")
    nav = initial_cash * close[days] / base
    steps = pd.DataFrame(
        {
            "date": pd.to_datetime(panel.dates[days]),
            "nav": nav,
            "cash": 0.0,
            "benchmark_close": close[days],
            "n_orders": 0,
            "n_rejected": 0,
            "turnover": 0.0,
        }
    )
    for col in STEP_COLUMNS[7:]:
        steps[col] = None
    return BacktestResult(
        steps=steps[STEP_COLUMNS],
        positions=pd.DataFrame(columns=POSITION_COLUMNS),
        orders=pd.DataFrame(columns=ORDER_COLUMNS),
        initial_cash=initial_cash,
        benchmark_start=base,
    )
