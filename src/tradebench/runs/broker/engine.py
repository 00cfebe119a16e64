"""The broker-based day loop: decide before the open, fill at the open, mark at the close.

The environment side (this loop and the broker) reads day T's quotes from the panel; the
agent only ever receives a `MarketView` at T and an `AccountSnapshot` at T-1's close. Each
completed day is one `StepRow`, a `PositionBlock` of its holdings and its `OrderRow`s; with
a `Journal` every day is persisted and a rerun continues after the last one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tradebench.agents.protocol import Agent, Decision, StepInfo
from tradebench.data.dataset import Dataset
from tradebench.data.panel import Panel
from tradebench.errors import ConfigError
from tradebench.features.style import member_masks
from tradebench.market.broker import DayQuotes, ExecutionContext, Universe, execute_orders
from tradebench.market.distributions import distribute
from tradebench.market.ledger import Account, Book, Holding
from tradebench.market.orders import OrderRecord, RejectCode
from tradebench.market.rules import MarketRules
from tradebench.runs.journal import Journal
from tradebench.runs.broker.rows import ORDER_COLUMNS, POSITION_COLUMNS, STEP_COLUMNS, OrderRow, PositionBlock, StepRow, fault_values, positions_frame, row_values, rows_frame
from tradebench.view import MarketView, to_day


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
        first = panel.dates[0]
        when = "on" if lo == first else "before"
        later = (
            f"start on {panel.dates[1]} or later"
            if len(panel.dates) > 1
            else "the dataset has a single day"
        )
        raise ConfigError(
            f"the window {start} .. {end} starts {when} the dataset's first day {first}: a "
            f"decision needs one day of history; {later}"
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


@dataclass
class Restored:
    """What a rerun continues from: the completed days' rows, the account, the last fills."""

    steps_done: int = 0
    steps: list[StepRow] = field(default_factory=list)
    positions: list[PositionBlock] = field(default_factory=list)
    orders: list[OrderRow] = field(default_factory=list)
    account: Account | None = None
    previous: tuple[OrderRecord, ...] = ()
    lines: list[dict[str, Any]] = field(default_factory=list)
    """The journal's completed lines as read (a benchmark's own fields included)."""


def _plain(value: Any) -> Any:
    """A row value as JSON (timestamps as ISO text, numpy scalars as Python, NaN as null)."""
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _json_row(row: Any) -> list[Any]:
    return [_plain(v) for v in row_values(row)]


def _from_json(row_type: type, values: list[Any]) -> Any:
    return row_type(pd.Timestamp(values[0]), *values[1:])


def _record_to_json(r: OrderRecord) -> dict[str, Any]:
    return {
        "symbol": r.symbol,
        "side": r.side,
        "requested_shares": r.requested_shares,
        "target_weight": r.target_weight,
        "status": r.status,
        "filled_shares": r.filled_shares,
        "fill_price": r.fill_price,
        "cost": r.cost,
        "reject_code": r.reject_code.value if r.reject_code else None,
        "message": r.message,
        "confidence": r.confidence,
        "reason": r.reason,
    }


def _record_from_json(d: dict[str, Any]) -> OrderRecord:
    code = d.get("reject_code")
    return OrderRecord(**{**d, "reject_code": RejectCode(code) if code else None})


def journal_line(
    step: StepRow,
    positions: PositionBlock,
    orders: list[OrderRow],
    account: Account,
    records: list[OrderRecord],
) -> dict[str, Any]:
    """One completed day as a journal line: its rows, the account after it, its fills."""
    return {
        "step": _json_row(step),
        "positions": [[_plain(v) for v in row] for row in positions.rows()],
        "orders": [_json_row(r) for r in orders],
        "account": {
            "cash": account.cash,
            "holdings": [[s, h.shares, h.available] for s, h in sorted(account.holdings.items())],
        },
        "records": [_record_to_json(r) for r in records],
    }


def restore(journal: Journal | None) -> Restored:
    """The engine state after the journal's completed days (a fresh start without one)."""
    lines = journal.restore() if journal is not None else []
    out = Restored(steps_done=len(lines), lines=lines)
    for line in lines:
        out.steps.append(_from_json(StepRow, line["step"]))
        day = pd.Timestamp(line["step"][0])
        out.positions.append(PositionBlock.from_rows(day, line["positions"]))
        out.orders += [_from_json(OrderRow, r) for r in line["orders"]]
    if lines:
        state = lines[-1]["account"]
        account = Account(state["cash"])
        account.holdings = {s: Holding(int(n), int(a)) for s, n, a in state["holdings"]}
        out.account = account
        out.previous = tuple(_record_from_json(d) for d in lines[-1]["records"])
    return out


async def run_backtest(
    dataset: Dataset,
    agent: Agent,
    start: str,
    end: str,
    rules: MarketRules | None = None,
    on_step: Callable[[int, int], None] | None = None,
    journal: Journal | None = None,
) -> BacktestResult:
    """Run `agent` from `start` to `end` (inclusive) under `rules` (market defaults).

    With a `journal`, every completed day is persisted and a rerun continues after the
    last completed day with the restored account.
    """
    panel = dataset.panel
    rules = rules or MarketRules.for_market(dataset.market)
    days = trading_days(panel, start, end)
    marks = _filled_close(panel)
    bench = panel.index["close"]
    bench_start = float(bench[days[0] - 1])
    state = restore(journal)
    account = state.account or Account(rules.initial_cash)
    steps, positions, orders = state.steps, state.positions, state.orders
    previous = state.previous
    column = panel.column_map
    members = member_masks(panel, days[state.steps_done :])
    for i in range(state.steps_done, len(days)):
        t = days[i]
        account.unlock()
        view = MarketView(panel, panel.dates[t], market=dataset.market)
        book = account.book(column)
        snapshot = account.snapshot(marks[t - 1], column, book)
        info = StepInfo(
            index=i + 1,
            total=len(days),
            first_day=panel.dates[days[0]],
            previous=previous,
            cum_return=snapshot.nav / rules.initial_cash - 1,
            bench_return=float(bench[t - 1] / bench_start - 1),
        )
        decision = await agent.decide(view, snapshot, info)
        factors = panel.fields["adj_factor"]
        paid = distribute(account, factors[t - 1], factors[t], marks[t - 1], column, book)
        universe = Universe(members[i - state.steps_done], column)
        ctx = ExecutionContext(rules=rules, nav_prev=snapshot.nav, universe=universe)
        records = execute_orders(
            list(decision.action.orders), account, day_quotes(panel, t, marks), ctx
        )
        day = pd.Timestamp(panel.dates[t])
        credited = sum(d.cash + d.shares * float(marks[t][column[d.symbol]]) for d in paid)
        book = account.book(column)
        step = _step_row(day, account, marks[t], panel, t, decision, records, snapshot.nav, book)
        step.distributions = credited
        held = position_block(day, account, marks[t], column, book)
        order_rows = [order_row(day, r, _sent(decision, k)) for k, r in enumerate(records)]
        if journal is not None:
            line = journal_line(step, held, order_rows, account, records)
            journal.append(i, line, decision.trace)
        steps.append(step)
        positions.append(held)
        orders += order_rows
        previous = tuple(records)
        if on_step is not None:
            on_step(i + 1, len(days))
    orders_frame = _with_outcomes(rows_frame(orders, OrderRow), panel)
    return BacktestResult(
        steps=rows_frame(steps, StepRow),
        positions=positions_frame(positions),
        orders=orders_frame,
        initial_cash=rules.initial_cash,
        benchmark_start=bench_start if np.isfinite(bench_start) else None,
    )


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
    journal: Journal | None = None,
) -> BacktestResult:
    """Blocking wrapper of `run_backtest` for scripts and the CLI."""
    return asyncio.run(run_backtest(dataset, agent, start, end, rules, on_step, journal))


def _step_row(
    day: pd.Timestamp,
    account: Account,
    close: np.ndarray,
    panel: Panel,
    t: int,
    decision: Decision,
    records: list[OrderRecord],
    nav_prev: float,
    book: Book | None = None,
) -> StepRow:
    traded = sum(r.filled_shares * (r.fill_price or 0.0) for r in records)
    return StepRow(
        date=day,
        nav=account.nav(close, panel.column_map, book),
        cash=account.cash,
        benchmark_close=float(panel.index["close"][t]),
        n_orders=len(records),
        n_rejected=sum(r.status == "rejected" for r in records),
        turnover=traded / nav_prev if nav_prev > 0 else 0.0,
        parse_failures=decision.parse_failures,
        tool_calls=decision.tool_calls,
        tool_calls_valid=decision.tool_calls_valid,
        retries=decision.retries,
        tokens_in=decision.tokens_in,
        tokens_out=decision.tokens_out,
        cost_usd=decision.cost_usd,
        fallback=decision.fallback,
        research_cap_hit=decision.research_cap_hit,
        **fault_values(decision.faults),
    )


def position_block(
    day: pd.Timestamp,
    account: Account,
    close: np.ndarray,
    column: dict[str, int],
    book: Book | None = None,
) -> PositionBlock:
    """The account's holdings at a day's close as one `positions.parquet` block (`book`:
    `account.book(column)` when already read)."""
    book = book or account.book(column)
    shares, prices = book.shares.astype(np.float64), close[book.cols]
    nav = account.cash + float(shares @ prices)
    return PositionBlock(
        date=day,
        symbol=book.symbols,
        shares=book.shares.tolist(),
        shares_available=book.available.tolist(),
        close=prices.tolist(),
        weight=(shares * prices / nav).tolist(),
    )


_CODE_TEXT = {code: code.value for code in RejectCode}
"""Each refusal code's text (an enum's `.value` is a slow descriptor on a hot path)."""


def order_row(day: pd.Timestamp, r: OrderRecord, sent: str | None = None) -> OrderRow:
    """One broker record as an `orders.parquet` row (`sent`: the id as the model wrote it)."""
    return OrderRow(
        date=day,
        symbol=r.symbol,
        side=r.side,
        requested_shares=r.requested_shares,
        target_weight=r.target_weight,
        filled_shares=r.filled_shares,
        fill_price=r.fill_price,
        cost=r.cost,
        status=r.status,
        reject_code=_CODE_TEXT[r.reject_code] if r.reject_code else None,
        message=r.message,
        confidence=r.confidence,
        reason=r.reason,
        stock_id_sent=sent,
    )


def _with_outcomes(orders: pd.DataFrame, panel: Panel) -> pd.DataFrame:
    """Calibration outcome per filled order: was the call right on the day after the fill?

    BUY is right when the close-to-close adjusted return from the fill day to the next
    trading day is > 0, SELL when < 0; NaN when unfilled or the next day is not in the data.
    """
    if orders.empty:
        return orders
    day = orders["date"].to_numpy().astype("datetime64[D]")
    t = np.searchsorted(panel.dates, day)
    cols = pd.Index(panel.symbols).get_indexer(orders["symbol"])
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
    for col in STEP_COLUMNS:  # the model diagnostics: null for a reference
        if col not in steps:
            steps[col] = None
    return BacktestResult(
        steps=steps[STEP_COLUMNS],
        positions=pd.DataFrame(columns=POSITION_COLUMNS),
        orders=pd.DataFrame(columns=ORDER_COLUMNS),
        initial_cash=initial_cash,
        benchmark_start=base,
    )
