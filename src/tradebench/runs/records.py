"""The run-folder contract, defined once: file names and typed versioned records.

A run folder holds `spec.yaml`, `summary.parquet`, `budget.json`, `cache.sqlite` and one
folder per episode under `episodes/`. Each episode folder holds `episode.json`
(`EpisodeRecord`), its tables and `metrics.json`, and while it runs the crash-safe
`progress.jsonl` and the masked `trace.jsonl`. Broker-based episodes (and
`tradebench backtest`) also write `run.json` (`RunRecord`) and the step, position and order
tables, whose rows `runs.broker.rows` defines.
docs/runs.md has the whole table.

Records carry `schema_version`. Version 2 is written today; the `before` validators read
the version-1 files written before it (no `schema_version`, no `benchmark`, `agent` as a
dict or a bare name, windows as lists or flat keys, no `kind`), so older run folders still
load and report. Files are read through `runs.store`, which treats a file without a
version as version 1; records built in code are version 2.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


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


def episode_folder(run_dir: Path, episode_id: str) -> Path:
    """Where an episode's files live."""
    return Path(run_dir) / EPISODES_DIR / episode_id
