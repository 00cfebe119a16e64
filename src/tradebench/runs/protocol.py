"""What a benchmark is to the harness: the `Benchmark` protocol and what it is handed.

A benchmark validates its `options` block, expands a spec into `EpisodeRef`s, runs one
episode when the executor asks (with an `EpisodeContext`: the data, the folder, the
journal and, for model episodes, the pool's model) and returns its `EpisodeRecord`. It adds
its own summary columns and report sections. The harness (`runs.executor`) plans, resumes,
schedules and summarises, and never names a benchmark: benchmarks are registered by name in
`tradebench.benchmarks.entry.BENCHMARKS` (a `registry.Registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from tradebench.data.dataset import Dataset
from tradebench.llm.base import ChatModel
from tradebench.runs.axes import Axis
from tradebench.runs.journal import Journal
from tradebench.runs.records import NOT_APPLICABLE, EpisodeRecord, Kind
from tradebench.runs.spec import AgentEntry, RunSpec, Window


class EpisodeRef(BaseModel):
    """One cell of a benchmark's grid, known before it runs."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Folder name under `episodes/`; stable across reruns."""
    agent: str
    """Agent label from the spec."""
    kind: Kind
    mode: str = NOT_APPLICABLE
    mask: str = NOT_APPLICABLE
    seed: int = 0
    window: Window
    task: dict[str, Any] = Field(default_factory=dict)
    """The benchmark's own description of the cell (symbol, persona, ...)."""

    def record(self, benchmark: str, status: str, **fields: Any) -> EpisodeRecord:
        """This episode's `EpisodeRecord` in `status`, with extra fields."""
        return EpisodeRecord(
            benchmark=benchmark,
            episode_id=self.id,
            agent=self.agent,
            kind=self.kind,
            mode=self.mode,
            mask=self.mask,
            seed=self.seed,
            window={"start": self.window.start, "end": self.window.end},
            status=status,
            **fields,
        )


@dataclass
class EpisodeContext:
    """What one episode is given to run with."""

    spec: RunSpec
    options: Any
    """The benchmark's validated options."""
    dataset: Dataset
    run_dir: Path
    folder: Path
    """The episode's own folder (created)."""
    agent: AgentEntry | None
    """The spec's entry for the episode's agent (None for references such as the index)."""
    model: ChatModel | None = None
    """The pool's model for LLM episodes; None for baselines."""
    on_step: Callable[[], None] = field(default=lambda: None)
    """Call once per completed step (progress display)."""

    def journal(self) -> Journal:
        """The crash-safe journal of the episode's folder."""
        return Journal(self.folder)


SummaryColumns = dict[str, Any]


class Benchmark(Protocol):
    """A benchmark as the harness runs it.

    Two optional members are read when present: `resolve_options(spec, options, dataset)`
    returns the options with the defaults that depend on the grid and the data filled in
    (what `spec.yaml` records), and `resume_hints` maps a dotted spec key to advice added
    to a refused rerun that differs in it.
    """

    name: str
    """Registered name (`benchmark:` in specs)."""
    options_model: type[BaseModel]
    """Validates the spec's `options` block."""
    axes: tuple[Axis, ...]
    """The grid axes it has (`runs.axes`: `choice_axis("modes", ...)`, `mask_axis()`), each
    with the values a spec may name and its defaults; a spec naming values of an axis it
    does not declare is refused."""
    summary_columns: tuple[str, ...]
    """Its columns of `summary.parquet`, after the harness's `COMMON_COLUMNS`, in order: what
    `summary_row` returns (`BROKER_COLUMNS` first for a benchmark with `broker_files`)."""
    broker_files: bool
    """Whether its episodes write the broker's tables (`steps.parquet`, and positions and
    orders when it trades), so the report's broker sections (equity, metric panel,
    rejections, tokens, faults, model episodes, rationales) apply to it."""
    report_sections: Sequence[Callable[..., Any]]
    """Its own `report` section builders `(RunData, ReportOptions) -> Section | None`, after
    the common ones (and the broker ones when it has `broker_files`)."""

    def expand(self, spec: RunSpec, options: Any, dataset: Dataset) -> list[EpisodeRef]:
        """Every episode of the grid in a stable order; fail here on bad cells (before any
        model call)."""
        ...

    async def run_episode(self, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
        """Run (or resume from the journal) one episode, write its files, return its record
        with status `done`."""
        ...

    def summary_row(self, record: EpisodeRecord, folder: Path) -> SummaryColumns:
        """The episode's metric columns for `summary.parquet`."""
        ...
