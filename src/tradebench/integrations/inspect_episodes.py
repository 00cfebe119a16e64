"""Run-spec benchmarks (portfolio, single stock) as inspect_ai samples, solver and scorer.

The grid comes from the benchmark's own `expand` on a run spec (planned by the harness's
`runs.executor.plan`, which resolves the data and writes `spec.yaml` to the work folder);
each model episode of the grid is one sample. The solver runs that episode with the
benchmark's own `run_episode` (its prompts, masking, point-in-time view, tools, broker and
journal), the model being inspect's, and sets the masked conversations as the sample's
messages. The scorer is the benchmark's own `summary_row` over the episode's folder: the
numeric columns become one dict-valued score, averaged over samples by inspect.

Nothing that names a real stock or day reaches the log for a masked episode: sample ids
and inputs name only mode, mask, seed and window number, and the score's metadata keeps
the episode id, window and symbol only when the mask hides neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from tradebench.benchmarks import BENCHMARKS
from tradebench.errors import ConfigError
from tradebench.integrations.inspect_model import InspectChatModel, model_config_for
from tradebench.masking import hides_dates, hides_stocks
from tradebench.runs.executor import Plan, cached_dataset, plan
from tradebench.runs.protocol import Benchmark, EpisodeContext, EpisodeRef
from tradebench.runs.records import NOT_APPLICABLE, episode_folder
from tradebench.runs.spec import AgentEntry, RunSpec
from tradebench.runs.store import read_episode_record, write_episode_record

DEFAULT_AGENT = "model"
"""Name of the model agent when the spec has none (it is part of each episode id)."""
SAFE_METADATA = ("status", "price_mode", "persona", "mode", "mask", "seed", "n_steps")
"""Text columns of a summary row that never name a stock or a day."""


@dataclass(frozen=True)
class EpisodeSet:
    """A planned grid of one model agent: the samples and how to run and score them."""

    benchmark: Benchmark
    plan: Plan
    run_dir: Path
    agent: AgentEntry
    refs: dict[str, EpisodeRef]
    """Episode by sample id."""

    def folder(self, sample_id: str) -> Path:
        """The episode folder of a sample."""
        return episode_folder(self.run_dir, self.refs[sample_id].id)


def model_agent(spec: RunSpec, name: str | None) -> AgentEntry:
    """The spec's model agent the samples run as: `name`, else the first one, else a fresh
    entry (its settings beyond the name and step cap are replaced by inspect's model).

    Raises:
        ConfigError: `name` is not a model agent of the spec.
    """
    llm = spec.llm_agents()
    if name is not None:
        found = [a for a in llm if a.name == name]
        if not found:
            raise ConfigError(
                f"agent {name!r} is not a model agent of the spec; "
                f"its model agents: {[a.name for a in llm] or 'none'}"
            )
        return found[0]
    return llm[0] if llm else AgentEntry(name=DEFAULT_AGENT, model="openai:inspect")


def sample_id(ref: EpisodeRef, window_number: int) -> str:
    """A sample id that names no stock or day: mode, mask, seed, window number."""
    return f"{ref.mode}_{ref.mask}_s{ref.seed}_w{window_number}"


def _reveals(mask: str) -> bool:
    """Whether `mask` lets real stocks and days be shown (`bright`, or no mask at all)."""
    if mask == NOT_APPLICABLE:
        return True
    return not (hides_dates(mask) or hides_stocks(mask))  # type: ignore[arg-type]


def describe(benchmark: str, ref: EpisodeRef, window_number: int) -> str:
    """The sample's input: what the episode is, without real names under a mask."""
    text = (
        f"One {benchmark} episode: mode {ref.mode}, mask {ref.mask}, seed {ref.seed}, "
        f"window {window_number}."
    )
    if _reveals(ref.mask):
        text += f" Window {ref.window.start}..{ref.window.end}; episode {ref.id}."
    return text


def plan_episodes(
    benchmark_name: str, spec: RunSpec, run_dir: Path, agent: str | None
) -> EpisodeSet:
    """Plan the spec's grid for one model agent (baselines and references left out).

    Raises:
        ConfigError: Bad spec, options, data or cells, or a work folder written with
            another spec.
    """
    benchmark = BENCHMARKS.get(benchmark_name)
    entry = model_agent(spec, agent)
    spec = spec.model_copy(update={"benchmark": benchmark_name, "agents": [entry]})
    planned = plan(benchmark, spec, run_dir)
    windows = {w: i + 1 for i, w in enumerate(planned.spec.windows)}
    refs: dict[str, EpisodeRef] = {}
    for ref in planned.episodes:
        if ref.kind == "llm":
            refs[sample_id(ref, windows.get(ref.window, 1))] = ref
    if not refs:
        raise ConfigError("the spec's grid holds no model episode")
    return EpisodeSet(benchmark, planned, run_dir, entry, refs)


def episode_dataset(episodes: EpisodeSet, name: str) -> MemoryDataset:
    """One sample per model episode, in the grid's order."""
    windows = {w: i + 1 for i, w in enumerate(episodes.plan.spec.windows)}
    samples = [
        Sample(
            id=ident,
            input=describe(episodes.benchmark.name, ref, windows.get(ref.window, 1)),
            metadata={"mode": ref.mode, "mask": ref.mask, "seed": ref.seed},
        )
        for ident, ref in episodes.refs.items()
    ]
    return MemoryDataset(samples, name=name)


def _last_text(state: TaskState) -> str:
    return next((m.text for m in reversed(state.messages) if m.role == "assistant"), "")


def episode_solver(episodes: EpisodeSet) -> Solver:
    """The solver that runs one sample's episode with inspect's model."""

    @solver(name="tradebench_episode")
    def tradebench_episode() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            ref = episodes.refs[str(state.sample_id)]
            inspect_model = get_model()
            config = model_config_for(inspect_model, episodes.agent.max_tokens)
            model = InspectChatModel(inspect_model, config)
            served = episodes.agent.model_config_().model_copy(
                update={
                    "provider": config.provider,
                    "model": config.model,
                    "base_url": None,
                    "temperature": config.temperature,
                    "max_tokens": config.max_tokens,
                }
            )
            agent = episodes.agent.model_copy(update={"model": served})
            folder = episodes.folder(str(state.sample_id))
            folder.mkdir(parents=True, exist_ok=True)
            ctx = EpisodeContext(
                spec=episodes.plan.spec,
                options=episodes.plan.options,
                dataset=cached_dataset(str(episodes.plan.dataset)),
                run_dir=episodes.run_dir,
                folder=folder,
                agent=agent,
                model=model,
            )
            write_episode_record(folder, ref.record(episodes.benchmark.name, "running"))
            record = await episodes.benchmark.run_episode(ref, ctx)
            write_episode_record(folder, record)
            state.messages = model.transcript()
            state.output = ModelOutput.from_content(str(inspect_model), _last_text(state))
            return state

        return solve

    return tradebench_episode()


def numeric_values(row: Mapping[str, Any]) -> dict[str, float]:
    """The numeric columns of a summary row as floats (booleans as 0/1, missing as NaN)."""
    out: dict[str, float] = {}
    for key, value in row.items():
        if isinstance(value, bool | int | float | np.number):
            out[key] = float(value)
    return out


def row_metadata(row: Mapping[str, Any], mask: str) -> dict[str, Any]:
    """The text columns of a summary row that are safe to log under `mask`."""
    shown = [k for k in row if _reveals(mask) or k in SAFE_METADATA]
    return {k: row[k] for k in shown if not isinstance(row[k], bool | int | float | np.number)}


def episode_scorer(episodes: EpisodeSet) -> Scorer:
    """The benchmark's summary row of the sample's episode as a dict-valued score."""

    @scorer(metrics={"*": [mean()]}, name="tradebench_panel")
    def tradebench_panel() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            folder = episodes.folder(str(state.sample_id))
            record = read_episode_record(folder)
            if record is None or record.status != "done":
                raise ConfigError(f"episode of sample {state.sample_id} did not finish")
            row = episodes.benchmark.summary_row(record, folder)
            mask = episodes.refs[str(state.sample_id)].mask
            return Score(value=numeric_values(row), metadata=row_metadata(row, mask))

        return score

    return tradebench_panel()
