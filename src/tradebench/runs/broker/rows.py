"""The broker episode's table rows: `StepRow`s, `PositionBlock`s (one day's holdings) and
`OrderRow`s, with the frames `steps.parquet`, `positions.parquet` and `orders.parquet` are
built from (docs/runs.md has the columns)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from tradebench.llm.types import CallFaults
from tradebench.metrics.reliability import FAULT_COLUMNS


@dataclass(slots=True)
class StepRow:
    """One decision day of a broker episode (a row of `steps.parquet`).

    The model diagnostics stay None for rule agents and the benchmark index.
    """

    date: pd.Timestamp
    nav: float
    """Net asset value at the day's close."""
    cash: float
    benchmark_close: float
    n_orders: int
    n_rejected: int
    turnover: float
    """Traded value over the previous close's NAV."""
    parse_failures: int | None = None
    """Model replies that could not be read (a diagnostic; retries included)."""
    tool_calls: int | None = None
    tool_calls_valid: int | None = None
    retries: int | None = None
    """Submission attempts after the first (invalid actions sent back for another try)."""
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    distributions: float | None = None
    """Value credited by dividends and share distributions that day."""
    fallback: bool | None = None
    """No submission passed validation after the retries, so the step traded nothing."""
    research_cap_hit: bool | None = None
    """Research stopped at the safety cap on tool calls."""
    faults_429: int | None = None
    """HTTP 429 (rate limited) answers the step's model calls met, each retried."""
    faults_5xx: int | None = None
    """Retryable HTTP 5xx answers (500, 502, 503, 504, 520, 522, 524, 529) met."""
    faults_timeout: int | None = None
    """Attempts that ran past the per-attempt HTTP timeout (`timeout_s`)."""
    faults_connection: int | None = None
    """Attempts whose connection failed or was dropped before a reply."""
    faults_other: int | None = None
    """Attempts answered with another retryable status (HTTP 408, 409, 425)."""
    http_retries: int | None = None
    """HTTP attempts after the first, summed over the step's model calls: the endpoint's
    retries, not the submission retries of `retries`."""
    retry_wait_s: float | None = None
    """Seconds of backoff slept between those attempts (as scheduled, Retry-After
    honoured)."""
    failed_attempt_s: float | None = None
    """Wall seconds spent in the attempts that failed (waiting out a timeout, say)."""
    tool_choice_fallbacks: int | None = None
    """Steps down the forced-call ladder: `tool_choice` forms the endpoint rejected or
    ignored before the form that worked (see `llm.openai_provider`)."""


def fault_values(faults: CallFaults | None) -> dict[str, Any]:
    """A step's endpoint-fault columns (`metrics.reliability.FAULT_COLUMNS`, the last
    `StepRow` fields and the last single-stock series columns) from its summed
    `CallFaults`; all None without one (rule agents)."""
    if faults is None:
        return dict.fromkeys(FAULT_COLUMNS)
    return {
        "faults_429": faults.http_429,
        "faults_5xx": faults.http_5xx,
        "faults_timeout": faults.timeout,
        "faults_connection": faults.connection,
        "faults_other": faults.other,
        "http_retries": faults.retries,
        "retry_wait_s": faults.retry_wait_s,
        "failed_attempt_s": faults.failed_attempt_s,
        "tool_choice_fallbacks": faults.tool_choice_fallbacks,
    }


@dataclass(slots=True)
class PositionBlock:
    """One day's holdings at the close, as columns (that date's rows of `positions.parquet`).

    Columnar because a book of a few hundred names over a few hundred days is a large
    table: rows are materialised only for the journal.
    """

    date: pd.Timestamp
    symbol: list[str]
    shares: list[int]
    shares_available: list[int]
    """Shares sellable the next day (T+1 locks today's buys)."""
    close: list[float]
    weight: list[float]

    def rows(self) -> list[list[Any]]:
        """The block as rows in column order (what the journal stores)."""
        day = [self.date] * len(self.symbol)
        return [
            list(r)
            for r in zip(
                day,
                self.symbol,
                self.shares,
                self.shares_available,
                self.close,
                self.weight,
                strict=True,
            )
        ]

    @classmethod
    def from_rows(cls, date: pd.Timestamp, rows: list[list[Any]]) -> PositionBlock:
        """A block from rows (date first, as `rows()` writes them)."""
        cols = list(zip(*rows, strict=True)) if rows else [[]] * 6
        return cls(date, list(cols[1]), list(cols[2]), list(cols[3]), list(cols[4]), list(cols[5]))


@dataclass(slots=True)
class OrderRow:
    """One order as executed, with the id the agent sent (a row of `orders.parquet`)."""

    date: pd.Timestamp
    symbol: str
    side: str
    requested_shares: int | None
    target_weight: float | None
    filled_shares: int
    fill_price: float | None
    cost: float
    status: str
    reject_code: str | None
    message: str | None
    confidence: float | None
    reason: str | None
    stock_id_sent: str | None = None
    """The identifier as the model wrote it (masked), None for rule agents."""
    outcome: float | None = None
    """Calibration outcome (1 right, 0 wrong, NaN unknown), filled in after the episode."""


def columns(row_type: type) -> list[str]:
    """The column names of a row type, in order."""
    return [f.name for f in fields(row_type)]


STEP_COLUMNS = columns(StepRow)
POSITION_COLUMNS = columns(PositionBlock)
ORDER_COLUMNS = columns(OrderRow)


def row_values(row: Any) -> list[Any]:
    """A row's values in column order (what the journal stores)."""
    return [getattr(row, name) for name in row.__slots__]


def rows_frame(rows: list[Any], row_type: type) -> pd.DataFrame:
    """Rows of one type as a frame with a nanosecond `date` column (fresh and restored agree)."""
    names = columns(row_type)
    values = attrgetter(*names)
    frame = pd.DataFrame([values(r) for r in rows], columns=names)
    frame["date"] = pd.to_datetime(frame["date"]).astype("datetime64[ns]")
    return frame


def positions_frame(blocks: list[PositionBlock]) -> pd.DataFrame:
    """Blocks as one `positions.parquet` frame (nanosecond `date`, rows by day then symbol).

    Columns are flattened in C (`itertools.chain`); the integer and float columns become
    arrays directly, as pandas would infer them from the lists (a column holding a null,
    and an empty frame, are left to pandas).
    """
    lengths = np.array([len(b.symbol) for b in blocks], dtype=np.int64)
    dates = pd.to_datetime([b.date for b in blocks]).astype("datetime64[ns]")
    data: dict[str, Any] = {"date": np.repeat(np.asarray(dates), lengths)}
    for name in POSITION_COLUMNS[1:]:
        flat = list(chain.from_iterable(getattr(b, name) for b in blocks))
        kind = _NUMERIC_POSITION_COLUMNS.get(name)
        data[name] = np.array(flat, dtype=kind) if kind and flat and None not in flat else flat
    frame = pd.DataFrame(data, columns=POSITION_COLUMNS)
    frame["date"] = frame["date"].astype("datetime64[ns]")
    return frame


_NUMERIC_POSITION_COLUMNS = {
    "shares": np.int64,
    "shares_available": np.int64,
    "close": np.float64,
    "weight": np.float64,
}
