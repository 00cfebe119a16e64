"""What a mandate episode is set up with, resolved once per run: the compiled mandate, the
analyst sources of each set, and each pool.

Agents a spec uses as *analysts* (`options.analyst_sets`) or as the *mandate compiler*
(`mandate_compiler_agent`) are model agents of the spec that are not constructors. An
episode that needs one builds it from the spec entry with the run's reply cache
(`get_model`), so every episode asking the same question replays the same reply; the
first episode to need a run-level file (the LLM-compiled `mandate.json`, a pool, a
capture) builds it under a lock (`once.build_once`) and every other reads its bytes.
The spend of these helper calls is counted in the episode's `analyst_tokens` and
`compiler_tokens`; the spec's budget caps apply to them per process, not across the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tradebench.benchmarks.mandate.analysts import AnalystSettings
from tradebench.benchmarks.mandate.model_analysts import ModelAnalystSource
from tradebench.benchmarks.mandate.once import build_once
from tradebench.benchmarks.mandate.options import MandateOptions, ModelAnalyst
from tradebench.benchmarks.mandate.pool import PoolChoice, choice_bytes, choose_pool, random_choice
from tradebench.benchmarks.mandate.sources import AnalystSource, RuleAnalyst
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError, MandateError
from tradebench.llm.base import ChatModel, get_model
from tradebench.llm.budget import Budget
from tradebench.llm.cache import ResponseCache
from tradebench.risk import CompiledMandate, compile_mandate, compile_mandate_llm
from tradebench.runs.protocol import EpisodeContext
from tradebench.runs.records import CACHE_FILE
from tradebench.runs.spec import RunSpec

MANDATE_FILE = "mandate.json"
POOLS_DIR = "pools"


def analyst_settings(opts: MandateOptions) -> AnalystSettings:
    """The analysts' settings from the options."""
    return AnalystSettings(opts.momentum_days, opts.news_lookback_days, opts.news_delay_minutes)


def helper_agents(opts: MandateOptions) -> set[str]:
    """Spec agents used as model analysts or as the mandate compiler (not constructors)."""
    names = {e.agent for entries in opts.sets().values() for e in entries if _is_model(e)}
    if opts.mandate_compiler == "llm" and opts.mandate_compiler_agent:
        names.add(opts.mandate_compiler_agent)
    return names


def _is_model(entry: object) -> bool:
    return isinstance(entry, ModelAnalyst)


def check_helpers(spec: RunSpec, opts: MandateOptions) -> None:
    """Every helper agent is a model agent of the spec (ConfigError otherwise)."""
    models = {a.name for a in spec.llm_agents()}
    if opts.mandate_compiler == "llm" and not opts.mandate_compiler_agent:
        raise ConfigError("mandate_compiler: llm needs mandate_compiler_agent (a model agent)")
    stray = sorted(helper_agents(opts) - models)
    if stray:
        raise ConfigError(
            f"options name {stray} as model analysts or mandate compiler, but they are not "
            f"model agents of the spec (models: {sorted(models)})"
        )


def set_agents(opts: MandateOptions, analyst_set: str) -> list[str]:
    """The model agents playing analysts in `analyst_set`."""
    return sorted({e.agent for e in opts.sets()[analyst_set] if isinstance(e, ModelAnalyst)})


@contextmanager
def helper_models(ctx: EpisodeContext, names: set[str]) -> Iterator[dict[str, ChatModel]]:
    """The models of the helper agents `names`, sharing the run's reply cache."""
    spec = ctx.spec
    cache = None
    if names and spec.cache.mode != "off":
        path = Path(spec.cache.path) if spec.cache.path else ctx.run_dir / CACHE_FILE
        cache = ResponseCache(path, spec.cache.mode)
    try:
        out = {}
        for name in sorted(names):
            entry = spec.agent(name)
            out[name] = get_model(
                entry.model_config_(),
                cache=cache,
                budget=Budget(spec.budget),
                retry=entry.retry_policy(),
            )
        yield out
    finally:
        if cache is not None:
            cache.close()


def sources(
    opts: MandateOptions, analyst_set: str, models: dict[str, ChatModel]
) -> list[AnalystSource]:
    """The analyst sources of `analyst_set`, in the set's order."""
    settings = analyst_settings(opts)
    out: list[AnalystSource] = []
    for entry in opts.sets()[analyst_set]:
        if isinstance(entry, ModelAnalyst):
            out.append(
                ModelAnalystSource(
                    entry.role, entry.agent, models[entry.agent], settings, opts.max_submit_retries
                )
            )
        else:
            out.append(RuleAnalyst(entry, settings))
    return out


def set_key(opts: MandateOptions, analyst_set: str) -> str:
    """What the set's captures depend on: its entries, the settings and the model configs."""
    entries = [e if isinstance(e, str) else e.model_dump() for e in opts.sets()[analyst_set]]
    return json.dumps([entries, analyst_settings(opts).__dict__], sort_keys=True)


def grammar_mandate(opts: MandateOptions) -> CompiledMandate:
    """The mandate compiled by the grammar (ConfigError when it does not compile)."""
    try:
        return CompiledMandate.build(
            opts.mandate, compile_mandate(opts.mandate), compiler="grammar"
        )
    except MandateError as exc:
        raise ConfigError(f"options.mandate does not compile: {exc}") from None


async def stored_mandate(
    run_dir: Path, opts: MandateOptions, models: dict[str, ChatModel]
) -> CompiledMandate:
    """The run's compiled mandate, compiled and written once to `RUN_DIR/mandate.json` (by
    the grammar, or by the compiler agent's model: its constraints validated by
    `RiskConstraints` and the tool's checks)."""

    async def build() -> bytes:
        if opts.mandate_compiler == "llm":
            model = models[opts.mandate_compiler_agent or ""]
            try:
                compiled = await compile_mandate_llm(
                    model, opts.mandate, max_retries=opts.max_submit_retries
                )
            except MandateError as exc:
                raise ConfigError(f"the mandate compiler failed: {exc}") from None
        else:
            compiled = grammar_mandate(opts)
        return (compiled.model_dump_json(indent=2) + "\n").encode()

    data = await build_once(Path(run_dir) / MANDATE_FILE, build)
    return CompiledMandate.model_validate_json(data)


async def stored_pool(
    ctx: EpisodeContext,
    first_day: str,
    size: int,
    seed: int,
    analyst_set: str,
    set_sources: list[AnalystSource],
) -> PoolChoice:
    """The pool of this window, set and K (and seed for the random control), chosen once
    and written to `RUN_DIR/pools/`."""
    opts: MandateOptions = ctx.options
    dataset: Dataset = ctx.dataset
    span = first_day.replace("-", "")
    if opts.pool == "random":
        name = f"{span}_{analyst_set}_k{size}_s{seed}.json"
    else:
        name = f"{span}_{analyst_set}_k{size}_{opts.pool_weights}.json"

    async def build() -> bytes:
        if opts.pool == "random":
            choice = random_choice(dataset, first_day, size, seed, analyst_set, opts.evidence_first)
        else:
            choice = await choose_pool(
                dataset,
                first_day,
                size,
                analyst_set,
                set_sources,
                opts.pool_weights,
                opts.ic_validation_days,
            )
        return choice_bytes(choice)

    data = await build_once(ctx.run_dir / POOLS_DIR / name, build)
    return PoolChoice.model_validate_json(data)
