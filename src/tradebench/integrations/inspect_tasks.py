"""tradebench's benchmarks as inspect_ai tasks: `tradebench/mcq`, `tradebench/portfolio`,
`tradebench/single_stock`.

Registered through the `inspect_ai` entry point (`pip install 'tradebench[inspect]'`), so

    inspect eval tradebench/mcq --model openai-api/<service>/<model>
    inspect eval tradebench/portfolio -T spec=examples/my_spec.yaml --model ...

runs a benchmark with inspect driving the model and writes an `.eval` log: one sample per
question or episode, the benchmark's own scores, the masked conversations as messages.
Prompts, masking, the point-in-time view, tools, broker and scoring are the benchmark's
(see `inspect_mcq` and `inspect_episodes`); parameters come with `-T name=value`.
See docs/inspect.md.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tradebench.errors import ConfigError

try:
    from inspect_ai import Task, task
    from inspect_ai.model import GenerateConfig
except ImportError:  # the tasks are loaded by inspect; say how to get it when imported alone
    raise ConfigError("inspect_ai is not installed: pip install 'tradebench[inspect]'") from None

from tradebench.benchmarks.mcq.eval.sandbox_tool import limits_for
from tradebench.benchmarks.mcq.eval.solve import Mode, NoToolsPrompt
from tradebench.integrations.inspect_episodes import (
    EpisodeSet,
    episode_dataset,
    episode_scorer,
    episode_solver,
    plan_episodes,
)
from tradebench.integrations.inspect_mcq import (
    demo_questions,
    eval_spec,
    load_questions,
    mcq_dataset,
    mcq_scorer,
    mcq_solver,
)
from tradebench.runs.executor import cached_dataset, resolve_dataset
from tradebench.runs.spec import RunSpec, Window, validation_lines
from tradebench.sandbox import sandbox_preflight

DEMO_DATASET = "synthetic:cn"
"""The embedded synthetic A-share market (generated in the work folder, no data needed)."""
DEMO_WINDOW = "2022-03-01:2022-03-29"
"""The demo's window on the synthetic market."""
DEMO_STEPS = 3
"""Decision days per episode by default (a short, cheap episode)."""

__all__ = ["mcq", "portfolio", "single_stock"]


def work_folder(work_dir: str | None) -> Path:
    """The folder episodes and generated data go to (a fresh temporary one by default)."""
    if work_dir is None:
        return Path(tempfile.mkdtemp(prefix="tradebench-inspect-"))
    path = Path(work_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def as_list(value: Any) -> list[Any] | None:
    """A `-T` value as a list: None stays None, a comma-separated string splits."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, Sequence):
        return list(value)
    return [value]


def parse_windows(value: Any) -> list[Window] | None:
    """`START:END` (or a list of them, or `START:END,START:END`) as windows.

    Raises:
        ConfigError: A window is not two YYYY-MM-DD days.
    """
    items = as_list(value)
    if items is None:
        return None
    out = []
    for item in items:
        start, sep, end = str(item).partition(":")
        try:
            out.append(Window(start=date.fromisoformat(start), end=date.fromisoformat(end)))
        except ValueError as exc:
            raise ConfigError(f"window {item!r}: use START:END, both YYYY-MM-DD ({exc})") from None
        if not sep:
            raise ConfigError(f"window {item!r}: use START:END")
    return out


def build_spec(benchmark: str, spec: str | None, defaults: dict[str, Any], **given: Any) -> RunSpec:
    """The run spec of a task: the file `spec` (or `defaults`) with every given `-T`
    override applied (None = not given). `options` overrides merge key by key.

    Raises:
        ConfigError: The spec cannot be read, is for another benchmark, or is invalid.
    """
    if spec is not None:
        base = RunSpec.load(Path(spec)).model_dump(mode="json")
        if base.get("benchmark") != benchmark:
            raise ConfigError(f"{spec} is a {base.get('benchmark')!r} spec, not {benchmark!r}")
    else:
        base = {"benchmark": benchmark, "agents": [], **defaults}
    options = given.pop("options", None) or {}
    base["options"] = {**base.get("options", {}), **options}
    base.update({k: v for k, v in given.items() if v is not None})
    if not base.get("agents"):
        base["agents"] = [{"name": "model", "provider": "openai", "model": "inspect"}]
    try:
        return RunSpec.model_validate(base)
    except ValidationError as exc:
        lines = validation_lines(exc).replace("\n  ", "; ")
        raise ConfigError(f"invalid task parameters: {lines}") from None


def episode_task(episodes: EpisodeSet, name: str) -> Task:
    """A task whose samples are the planned episodes."""
    return Task(
        dataset=episode_dataset(episodes, name),
        solver=episode_solver(episodes),
        scorer=episode_scorer(episodes),
        config=GenerateConfig(
            temperature=episodes.agent.temperature, max_tokens=episodes.agent.max_tokens
        ),
        name=name,
    )


@task
def mcq(
    questions: str | None = None,
    mode: Mode = "no_tools",
    no_tools_prompt: NoToolsPrompt = "letter",
    max_tool_calls: int = 8,
    sandbox_timeout_s: float = 30.0,
    allow_weak_sandbox: bool = False,
    limit: int | None = None,
    seed: int = 0,
    work_dir: str | None = None,
) -> Task:
    """The MCQ benchmark: one sample per question of `questions` (a `tradebench mcq build`
    file; default: 12 questions built on the synthetic market with `seed`).

    Args:
        questions: Question file (JSONL).
        mode: `no_tools` (one call, the letter read strictly) or `with_tools`
            (`run_python` in the sandbox, then a forced `answer`).
        no_tools_prompt: `letter` (a single letter) or `reasoning` (reasoning, then
            `Answer: X`).
        max_tool_calls: `with_tools`: research calls per question.
        sandbox_timeout_s: `with_tools`: wall-clock limit of one `run_python` call.
        allow_weak_sandbox: `with_tools`: run code where the kernel lacks a sandbox layer.
        limit: Only the first `limit` questions.
        seed: Seed of the default question set.
        work_dir: Where the default set is built (a temporary folder by default).
    """
    spec = eval_spec(mode, no_tools_prompt, max_tool_calls, sandbox_timeout_s, allow_weak_sandbox)
    if mode == "with_tools":  # before any model call: refuse where code cannot be confined
        sandbox_preflight(limits_for(sandbox_timeout_s, allow_weak_sandbox))
    path = Path(questions) if questions else demo_questions(work_folder(work_dir), seed)
    records = load_questions(path, limit)
    return Task(
        dataset=mcq_dataset(records, "mcq"),
        solver=mcq_solver(records, spec),
        scorer=mcq_scorer(records),
        config=GenerateConfig(temperature=0.0),
        name="mcq",
    )


@task
def portfolio(
    spec: str | None = None,
    dataset: str | None = None,
    window: str | list[str] | None = None,
    modes: str | list[str] | None = None,
    masks: str | list[str] | None = None,
    seeds: int | list[int] | None = None,
    max_steps: int | None = None,
    max_tool_calls: int | None = None,
    agent: str | None = None,
    work_dir: str | None = None,
) -> Task:
    """The portfolio benchmark: one sample per model episode of the grid (modes x masks x
    seeds x windows), each run through the broker.

    Args:
        spec: A `tradebench run` spec for `benchmark: portfolio`; its model agent's name
            and step cap are kept, inspect's model replaces its model.
        dataset: Dataset folder or `synthetic:cn[:SEED]` (default: the synthetic market).
        window: `START:END` decision window(s) (default: the demo's, March 2022).
        modes, masks, seeds: Grid axes (default: fixed_candidate, blinded, 0).
        max_steps: Decision days per episode (default 3 without a spec).
        max_tool_calls: Research calls per day.
        agent: Which model agent of the spec to run as (default: its first).
        work_dir: Where episodes are written (a temporary folder by default).
    """
    defaults = {
        "dataset": DEMO_DATASET,
        "windows": parse_windows(DEMO_WINDOW),
        "modes": ["fixed_candidate"],
        "masks": ["blinded"],
        "options": {"max_steps": DEMO_STEPS},
    }
    options = {
        k: v
        for k, v in {"max_steps": max_steps, "max_tool_calls": max_tool_calls}.items()
        if v is not None
    }
    run_spec = build_spec(
        "portfolio",
        spec,
        defaults,
        dataset=dataset,
        windows=parse_windows(window),
        modes=as_list(modes),
        masks=as_list(masks),
        seeds=as_list(seeds),
        options=options,
    )
    episodes = plan_episodes("portfolio", run_spec, work_folder(work_dir), agent)
    return episode_task(episodes, "portfolio")


@task
def single_stock(
    spec: str | None = None,
    dataset: str | None = None,
    window: str | list[str] | None = None,
    symbols: str | list[str] | None = None,
    cells: str | list[str] | None = None,
    personas: str | list[str] | None = None,
    masks: str | list[str] | None = None,
    seeds: int | list[int] | None = None,
    episode_length: int | None = None,
    agent: str | None = None,
    work_dir: str | None = None,
) -> Task:
    """The single-stock persona benchmark: one sample per model episode (task x mask x
    seed), scored by the benchmark's composite and its components.

    Args:
        spec: A `tradebench run` spec for `benchmark: single_stock`.
        dataset: Dataset folder or `synthetic:cn[:SEED]` (default: the synthetic market).
        window: `START:END` window(s) the symbols trade over (default: the demo's).
        symbols: Symbols to trade (default: the dataset's first, without a spec or cells).
        cells: Named cells (`tsla_main`, ...; need a dataset holding their symbols).
        personas: Personas (default: adaptive).
        masks, seeds: Grid axes (default: blinded, 0).
        episode_length: Decisions per episode (default 3 without a spec).
        agent: Which model agent of the spec to run as (default: its first).
        work_dir: Where episodes are written (a temporary folder by default).
    """
    folder = work_folder(work_dir)
    options: dict[str, Any] = {
        k: v
        for k, v in {
            "symbols": as_list(symbols),
            "cells": as_list(cells),
            "personas": as_list(personas),
            "episode_length": episode_length,
        }.items()
        if v is not None
    }
    defaults: dict[str, Any] = {
        "dataset": DEMO_DATASET,
        "windows": parse_windows(DEMO_WINDOW),
        "masks": ["blinded"],
        "options": {"personas": ["adaptive"], "episode_length": DEMO_STEPS},
    }
    if spec is None and "symbols" not in options and "cells" not in options:
        data = resolve_dataset(dataset or DEMO_DATASET, folder)
        defaults["options"]["symbols"] = [str(cached_dataset(str(data)).panel.symbols[0])]
    run_spec = build_spec(
        "single_stock",
        spec,
        defaults,
        dataset=dataset,
        windows=parse_windows(window),
        masks=as_list(masks),
        seeds=as_list(seeds),
        options=options,
    )
    episodes = plan_episodes("single_stock", run_spec, folder, agent)
    return episode_task(episodes, "single_stock")
