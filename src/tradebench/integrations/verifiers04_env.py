"""The single-stock persona benchmark as a verifiers 0.4 taskset (the `verifiers.v1` API).

Import this module only where verifiers 0.4 is installed: the classes below subclass
verifiers' own. verifiers finds plugins by a top-level module name, so the package
`tradebench_single_stock` re-exports them; run it as

    vf-eval tradebench-single-stock --env.taskset.cells tsla_main \
        --env.taskset.personas adaptive --env.taskset.timesteps 3 -m MODEL ...

- `SingleStockTaskset` yields one task per cell x persona (the FinMem 12 by default); the
  task's prompt is the masked first day, its system prompt the persona's rules.
- `SingleStockEnv` plays a task as one open interaction: each model reply is parsed as a
  JSON decision (format nudges, then an invalid hold, as in `tradebench run`) and the next
  day's message is the next user turn. The settled episode goes to `trace.info`.
- `SingleStockTask` scores it: reward `composite` (weight 1), metrics for each component.
- `SingleStockChatHarness`, the taskset's default harness, sends each turn to verifiers'
  interception endpoint from inside the rollout (no program to install, no sandbox), as
  `tradebench run` asks it: a new day alone after the system prompt, a nudge within its
  day's exchange, never the earlier days (the env flags each turn that opens a day in
  `trace.info`). Any other chat harness can be pinned with `--env.agent.harness.id`; it
  then gets the whole conversation.

The observation, decision parsing, ledger and scoring are the benchmark's own
(`verifiers_core`, `benchmarks.single_stock`).
"""

from __future__ import annotations

from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any

import verifiers
import verifiers.v1 as vf
from openai import AsyncOpenAI
from pydantic import Field, field_validator
from verifiers.v1.dialects.chat import message_to_wire

from tradebench.benchmarks.single_stock.config import (
    CELLS,
    DEFAULT_EPISODE_LENGTH,
    DEFAULT_WINDOW,
    PERSONAS,
    Persona,
    PriceMode,
    Task,
)
from tradebench.errors import ConfigError
from tradebench.integrations.verifiers_core import (
    COMPONENTS,
    INFO_KEY,
    EnvSettings,
    PendingStep,
    build_settings,
    episode_record,
    on_reply,
)
from tradebench.masking import MaskLevel

VERIFIERS_REQUIREMENT = "verifiers>=0.4.0,<0.5"
TASKSET_ID = "tradebench-single-stock"
NEW_DAY = "tradebench_new_day"
"""`trace.info` flag the env sets before each turn: True when the turn opens a new day."""
DAY_FROM = "tradebench_day_from"
"""`trace.info` index (into the conversation, system aside) where the current day starts."""

if not verifiers.__version__.startswith("0.4."):
    raise ConfigError(
        f"verifiers {verifiers.__version__} is installed; this taskset needs "
        f"{VERIFIERS_REQUIREMENT} (verifiers 0.3: tradebench.integrations.verifiers_env)"
    )

__all__ = [
    "TASKSET_ID",
    "SingleStockChatHarness",
    "SingleStockData",
    "SingleStockEnv",
    "SingleStockEnvConfig",
    "SingleStockTask",
    "SingleStockTaskset",
    "SingleStockTasksetConfig",
]


class SingleStockData(vf.TaskData):
    """One task's wire data: the benchmark's task (symbol, window, persona, cell name)."""

    tradebench_task: dict[str, Any]


class SingleStockTask(vf.Task[SingleStockData]):
    """Scores a played episode from the record the environment left in `trace.info`."""

    @property
    def key(self) -> str:
        """Durable identity across runs: cell and persona (`tsla_main/adaptive`)."""
        task = Task.model_validate(self.data.tradebench_task)
        return f"{task.cell}/{task.persona}"

    @vf.reward(weight=1.0)
    async def composite(self, trace: vf.Trace) -> float:
        """The benchmark's composite score in [0, 1]."""
        return float(_record(trace)["scores"]["composite"])

    @vf.metric
    async def components(self, trace: vf.Trace) -> dict[str, float]:
        """The four mapped components (`cum_return`, `sharpe`, `stability`, `discipline`)."""
        components = _record(trace)["scores"]["components"]
        return {name: float(components[name]) for name in COMPONENTS}


def _record(trace: vf.Trace) -> dict[str, Any]:
    record = trace.info.get(INFO_KEY)
    if record is None:
        raise ValueError(
            "the trace has no tradebench episode record: the task was not played by "
            "SingleStockEnv (pair it with --env.id tradebench-single-stock, the default)"
        )
    return record


class SingleStockTasksetConfig(vf.TasksetConfig):
    """The taskset's knobs, under `--env.taskset.*`."""

    dataset: str = "data/us"
    """A tradebench dataset folder holding the cells' symbols as bars."""
    cells: list[str] | None = None
    """Named cells (`tsla_main`, `nflx_main`, `amzn_main`, `msft_main`, `coin_main`);
    None: the four FinMem cells (`DEFAULT_CELLS`), unless `symbols` is given."""
    symbols: list[str] = Field(default_factory=list)
    """Dataset symbols traded over [start, end], after the cells."""
    start: date = DEFAULT_WINDOW[0]
    end: date = DEFAULT_WINDOW[1]
    personas: list[Persona] = Field(default_factory=lambda: list(PERSONAS))
    """`risk_seeking`, `risk_averse`, `adaptive`."""
    timesteps: int | None = Field(DEFAULT_EPISODE_LENGTH, ge=1)
    """Decisions per episode (None = every decision day of the window)."""
    nudges: int = Field(1, ge=0, le=5)
    """Format nudges per decision after an unreadable reply."""
    mask: MaskLevel = "bright"
    seed: int = 0
    """Seed of the mask's aliases."""
    price_mode: PriceMode | None = None
    """`actual` or `rebased`; None: rebased when the mask hides stocks, else actual."""
    prompt_version: str = "v1"

    @field_validator("dataset")
    @classmethod
    def _is_dataset(cls, dataset: str) -> str:
        if not (Path(dataset) / "manifest.json").is_file():
            raise ValueError(
                f"{dataset} is not a tradebench dataset (no manifest.json); create one with "
                "`tradebench data import` (docs/single_stock.md)"
            )
        return dataset

    @field_validator("cells")
    @classmethod
    def _known_cells(cls, cells: list[str] | None) -> list[str] | None:
        unknown = [c for c in cells or [] if c not in CELLS]
        if unknown:
            raise ValueError(f"unknown cells {unknown}; known: {', '.join(CELLS)}")
        return cells


class SingleStockTaskset(vf.Taskset[SingleStockTask, SingleStockTasksetConfig]):
    """Cells x personas of the single-stock benchmark, as configured."""

    @cached_property
    def plan(self) -> tuple[EnvSettings, list[Task]]:
        """The settings (dataset loaded once per process) and the benchmark's task list."""
        c = self.config
        return build_settings(
            c.dataset,
            cells=c.cells,
            symbols=c.symbols,
            personas=c.personas,
            start=c.start,
            end=c.end,
            episode_length=c.timesteps,
            nudges=c.nudges,
            mask=c.mask,
            seed=c.seed,
            price_mode=c.price_mode,
            prompt_version=c.prompt_version,
        )

    def load(self) -> list[SingleStockTask]:
        """One task per cell x persona, opened by its masked first day."""
        settings, tasks = self.plan
        out = []
        for task in tasks:
            context = settings.episode(task).context()
            data = SingleStockData(
                name=f"{task.cell}/{task.persona}",
                prompt=context.user,
                system_prompt=context.system,
                tradebench_task=task.model_dump(mode="json"),
            )
            out.append(SingleStockTask(data, self.config.task))
        return out


class SingleStockEnvConfig(vf.EnvConfig):
    """The one seat (`--env.agent.*`): the taskset's in-process chat harness, run locally."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime={"type": "subprocess"})


class SingleStockEnv(vf.Env[SingleStockEnvConfig]):
    """Plays one task as a multi-turn exchange: a decision per model turn."""

    async def run(self, task: SingleStockTask, agents: vf.Agents) -> None:
        """Answer each reply with a nudge or the next day; settle into `trace.info`."""
        settings, _ = self.taskset.plan
        episode = settings.episode(Task.model_validate(task.data.tradebench_task))
        pending = PendingStep()
        async with agents.agent.interaction(task) as exchange:
            segment = await exchange.turn()
            while not segment.terminated:
                outcome = on_reply(episode, pending, segment.last_reply, settings.options.nudges)
                if outcome.applied:
                    pending = PendingStep()
                if outcome.message is None:
                    break
                exchange.trace.info[NEW_DAY] = outcome.applied
                segment = await exchange.turn(outcome.message)
            exchange.trace.info.pop(NEW_DAY, None)
            exchange.trace.info.pop(DAY_FROM, None)
            exchange.trace.info[INFO_KEY] = episode_record(episode)


class SingleStockChatHarnessConfig(vf.HarnessConfig):
    """No knobs: the conversation is the whole program."""

    id: str = TASKSET_ID


class SingleStockChatHarness(vf.Harness[SingleStockChatHarnessConfig]):
    """One chat completion per segment, sent from inside the rollout to the interception
    endpoint (the harness contract allows an in-process loop): no tools, no sandbox."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def resume(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        messages: Any,
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        """The next segment, as `tradebench run` asks it: a new day alone (after the
        system prompt), a nudge within its day's exchange; never the earlier days."""
        branch = trace.branches[-1].messages if trace.branches else []
        conversation = [*(m for m in branch if m.role != "system"), *messages]
        if trace.info.get(NEW_DAY):
            trace.info[DAY_FROM] = len(conversation) - len(messages)
        day = conversation[int(trace.info.get(DAY_FROM, 0)) :]
        return await self.launch(
            ctx,
            trace,
            runtime,
            endpoint,
            secret,
            mcp_urls,
            data.model_copy(update={"prompt": day}),
        )

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        """Send the system prompt and the conversation so far; the reply lands on the trace."""
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages.extend(message_to_wire(m) for m in prompt or [])
        async with AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
            await client.chat.completions.create(model=ctx.model, messages=messages)
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")
