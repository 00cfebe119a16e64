"""Model-backed episodes: shared cache, shared budget, bounded concurrency, resume."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from tradebench.agents.loop_types import LoopConfig
from tradebench.benchmarks.portfolio.agent import PortfolioLLMAgent
from tradebench.benchmarks.portfolio.prompt_files import load_prompts
from tradebench.errors import BudgetExceeded
from tradebench.llm.base import ChatModel, get_model
from tradebench.llm.budget import Budget, BudgetState
from tradebench.llm.cache import ResponseCache
from tradebench.llm.types import Usage
from tradebench.market.rules import MarketRules
from tradebench.runs.backtest import run_backtest
from tradebench.runs.checkpoint import Checkpoint
from tradebench.runs.runner import (
    EPISODES,
    RunProgress,
    cached_dataset,
    episode_meta,
    episode_window,
    finish,
    step_cap,
)
from tradebench.runs.spec import Episode, RunSpec
from tradebench.runs.store import write_json

BUDGET_FILE = "budget.json"
T = TypeVar("T")


def _budget(spec: RunSpec, run_dir: Path) -> Budget:
    path = run_dir / BUDGET_FILE
    state = BudgetState.model_validate_json(path.read_text()) if path.exists() else None
    return Budget(spec.budget, state)


def _models(spec: RunSpec, run_dir: Path, budget: Budget) -> dict[str, ChatModel]:
    cache = None
    if spec.cache.mode != "off":
        cache = ResponseCache(Path(spec.cache.path or run_dir / "cache.sqlite"), spec.cache.mode)
    return {
        a.name: get_model(a.model_config_(), cache=cache, budget=budget)
        for a in spec.agents
        if a.is_llm
    }


async def _episode(
    spec: RunSpec,
    dataset: Path,
    run_dir: Path,
    ep: Episode,
    model: ChatModel,
    progress: RunProgress,
) -> None:
    ds = cached_dataset(str(dataset))
    opts = spec.options
    rules = MarketRules.for_market(ds.market, initial_cash=opts.initial_cash)
    prompts = load_prompts(opts.prompt_version)
    entry = next(a for a in spec.agents if a.name == ep.agent)
    folder = run_dir / EPISODES / ep.id
    extra = {
        "prompt_version": prompts.version,
        "prompt_sha256": prompts.sha256,
        "model": entry.model_config_().model_dump(mode="json"),
        "price_mode": opts.price_mode,
        "max_tool_calls": opts.max_tool_calls,
    }
    write_json(folder / "episode.json", episode_meta(ep, "running", extra))
    agent = PortfolioLLMAgent(
        model=model,
        mode=ep.mode,
        mask=ep.mask,
        seed=ep.seed,
        episode_id=ep.id,
        symbols=ds.panel.symbols,
        calendar=ds.panel.dates,
        rules=rules,
        loop=LoopConfig(
            max_tool_calls=opts.max_tool_calls,
            max_submit_retries=opts.max_submit_retries,
            offer_submit_in_research=ep.mode == "open_research",
        ),
        price_mode=opts.price_mode,
        candidates_k=opts.candidates_k,
        prompts=prompts,
        name=ep.agent,
    )
    start, end = episode_window(ds, ep, step_cap(opts.max_steps, entry.max_steps))
    result = await run_backtest(
        ds,
        agent,
        start,
        end,
        rules,
        on_step=lambda i, n: progress.bump(steps=1),
        checkpoint=Checkpoint(folder),
    )
    used = Usage(
        input_tokens=int(result.steps["tokens_in"].fillna(0).sum()),
        output_tokens=int(result.steps["tokens_out"].fillna(0).sum()),
    )
    price = spec.budget.price_for(entry.model_config_())
    cost = {"cost_usd": price.cost(used)} if price is not None else {}
    tokens = used.input_tokens + used.output_tokens
    finish(folder, ep, result, rules, {**extra, "tokens": tokens, **cost})
    progress.bump(episodes=1, tokens=tokens)


async def run_model_episodes(
    spec: RunSpec,
    run_dir: Path,
    todo: list[T],
    episode: Callable[[T, dict[str, ChatModel]], Awaitable[None]],
) -> None:
    """Run `episode(ep, models)` for each item, `concurrency` at a time, under the run's
    shared cache and budget; a budget stop cancels the rest, saves the budget and says how
    to continue. Every benchmark's model episodes go through here."""
    if not todo:
        return
    budget = _budget(spec, run_dir)
    models = _models(spec, run_dir, budget)
    gate = asyncio.Semaphore(spec.concurrency)

    async def guarded(ep: T) -> None:
        async with gate:
            await episode(ep, models)

    try:
        async with asyncio.TaskGroup() as group:
            for ep in todo:
                group.create_task(guarded(ep))
    except* BudgetExceeded as stop:
        raise BudgetExceeded(
            f"{stop.exceptions[0]} The run stopped cleanly: finished steps are saved; "
            "raise the budget in the spec and rerun the same command to continue."
        ) from None
    finally:
        (run_dir / BUDGET_FILE).write_text(budget.snapshot().model_dump_json(indent=2) + "\n")


async def run_llm_episodes(
    spec: RunSpec, dataset: Path, run_dir: Path, todo: list[Episode], progress: RunProgress
) -> None:
    """Run the portfolio benchmark's model episodes."""

    async def one(ep: Episode, models: dict[str, ChatModel]) -> None:
        await _episode(spec, dataset, run_dir, ep, models[ep.agent], progress)

    await run_model_episodes(spec, run_dir, todo, one)
