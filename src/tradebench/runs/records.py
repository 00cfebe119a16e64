"""The run-folder contract, defined once: file names, typed versioned records, table rows.

A run folder holds `spec.yaml`, `summary.parquet`, `budget.json`, `cache.sqlite` and one
folder per episode under `episodes/`. Each episode folder holds `episode.json`
(`EpisodeRecord`), its tables and `metrics.json`, and while it runs the crash-safe
`progress.jsonl` and the masked `trace.jsonl`. Broker-based episodes (and
`tradebench backtest`) also write `run.json` (`RunRecord`) and the step, position and order
tables, built from `StepRow`s, `PositionBlock`s (one day's holdings) and `OrderRow`s.
docs/runs.md has the whole table.

Records carry `schema_version`. Version 2 is written today; the `before` validators read
the version-1 files written before it (no `schema_version`, no `benchmark`, `agent` as a
dict or a bare name, windows as lists or flat keys, no `kind`), so older run folders still
load and report. Files are read through `runs.store`, which treats a file without a
version as version 1; records built in code are version 2.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import date
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tradebench.llm.types import CallFaults
from tradebench.metrics.reliability import FAULT_COLUMNS

RECORD_VERSION = 2
"""Version of the records this code writes."""

SPEC_FILE = "spec.yaml"
SUMMARY_FILE = "summary.parquet"
BUDGET_FILE = "budget.json"
CACHE_FILE = "cache.sqlite"
REPORT_FILE = "report.html"
EPISODES_DIR = "episodes"
EPISODE_FILE = "episode.json"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.json"
STEPS_FILE = "steps.parquet"
POSITIONS_FILE = "positions.parquet"
ORDERS_FILE = "orders.parquet"
PROGRESS_FILE = "progress.jsonl"
TRACE_FILE = "trace.jsonl"
TRACE_ZST_FILE = "trace.jsonl.zst"
"""A done episode's trace: the bytes of `trace.jsonl` as one zstd frame (`runs.trace`)."""

NOT_APPLICABLE = "n/a"
"""Mode and mask of episodes they do not apply to (baselines, the benchmark index)."""
Kind = Literal["llm", "baseline", "benchmark"]
KINDS: tuple[Kind, ...] = ("llm", "baseline", "benchmark")
STATUSES = ("done", "running", "failed")
DEFAULT_INITIAL_CASH = 1_000_000.0
"""Start capital assumed when no record names one (version-1 folders)."""
LEGACY_MODES = ("memory_only", "fixed_candidate", "open_research")
"""Modes that marked a version-1 record without `kind` as a model episode."""


class WindowRecord(BaseModel):
    """A window of decision days (both ends inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: date
    end: date


def _agent_label(agent: Any) -> str | None:
    """`"name"`, or from `{"name", "args": {"model"}}` (version 1) the label `name/model`."""
    if isinstance(agent, str):
        return agent
    if not isinstance(agent, dict):
        return None
    if agent.get("label"):
        return str(agent["label"])
    name = agent.get("name")
    model = (agent.get("args") or {}).get("model")
    if name and model:
        return f"{name}/{model}"
    return str(name) if name else None


def _window(raw: dict[str, Any]) -> Any:
    """`window` as {start, end} from a dict, a pair, or flat keys (version 1)."""
    window = raw.get("window")
    if isinstance(window, dict):
        return window
    if isinstance(window, list | tuple) and len(window) == 2:
        return {"start": window[0], "end": window[1]}
    start = raw.get("window_start", raw.get("start"))
    end = raw.get("window_end", raw.get("end"))
    return {"start": start, "end": end} if start is not None and end is not None else None


def infer_kind(kind: Any, agent: str | None, mode: str) -> Kind:
    """An explicit kind, else benchmark by name, llm when a model mode is set, else baseline."""
    if kind in KINDS:
        return kind
    if agent == "benchmark":
        return "benchmark"
    return "llm" if mode in LEGACY_MODES else "baseline"


class EpisodeRecord(BaseModel):
    """`episode.json`: what an episode is and how far it got.

    The common fields are typed here; a benchmark adds its own (persona, symbol, price mode,
    decision days, ...) beside them, and they are kept as written.
    """

    model_config = ConfigDict(extra="allow")

    schema_version: int = RECORD_VERSION
    benchmark: str = "portfolio"
    """Registered benchmark that ran it."""
    episode_id: str
    agent: str
    """Agent label from the spec."""
    kind: Kind
    mode: str = NOT_APPLICABLE
    """Information mode (portfolio) or persona (single stock); `n/a` where none applies."""
    mask: str = NOT_APPLICABLE
    seed: int | None = None
    window: WindowRecord | None = None
    status: str = "running"
    initial_cash: float | None = None
    n_steps: int | None = None
    """Steps completed (written when the episode is done)."""
    tokens: int | None = None
    """Input plus output tokens of a model episode."""
    cost_usd: float | None = None
    model: dict[str, Any] | None = None
    """The model configuration of an LLM agent (no key)."""
    baseline: dict[str, Any] | None = None
    """Registered baseline name and arguments."""
    prompt_version: str | None = None
    prompt_sha256: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_version_1(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or raw.get("schema_version", RECORD_VERSION) >= 2:
            return raw
        out = dict(raw)
        out["schema_version"] = 1
        out["agent"] = _agent_label(raw.get("agent")) or raw.get("episode_id")
        out["window"] = _window(raw)
        for key in ("window_start", "window_end", "start", "end"):
            out.pop(key, None)
        out["mode"] = str(raw.get("mode") or NOT_APPLICABLE)
        out["mask"] = str(raw.get("mask") or NOT_APPLICABLE)
        out["kind"] = infer_kind(raw.get("kind"), out["agent"], out["mode"])
        out.setdefault("benchmark", "portfolio")
        return out

    @property
    def extras(self) -> dict[str, Any]:
        """The benchmark's own fields (everything not typed here)."""
        return dict(self.model_extra or {})


class AgentRef(BaseModel):
    """A registered agent and the arguments it was built with."""

    model_config = ConfigDict(frozen=True)

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class RunRecord(BaseModel):
    """`run.json` of a broker backtest: agent, window, capital, rules, data identity."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = RECORD_VERSION
    agent: AgentRef
    start: date
    end: date
    initial_cash: float = DEFAULT_INITIAL_CASH
    benchmark_start: float | None = None
    """Index close on the day before the window (the benchmark's base)."""
    rules: dict[str, Any] = Field(default_factory=dict)
    """The `MarketRules` the broker applied."""
    dataset: str | None = None
    dataset_name: str | None = None
    bars_sha256: str | None = None
    price_basis: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_version_1(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or raw.get("schema_version", RECORD_VERSION) >= 2:
            return raw
        out = {**raw, "schema_version": 1}
        if isinstance(raw.get("agent"), str):
            out["agent"] = {"name": raw["agent"], "args": {}}
        cash = (raw.get("rules") or {}).get("initial_cash")
        out.setdefault("initial_cash", cash if cash else DEFAULT_INITIAL_CASH)
        return out


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


def episode_folder(run_dir: Path, episode_id: str) -> Path:
    """Where an episode's files live."""
    return Path(run_dir) / EPISODES_DIR / episode_id
