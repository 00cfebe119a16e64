"""Build MCQ sets from real backtests: the base pool, a sampled set or the curated 10/10/10.

One seed controls everything random (strategy parameters, template choice, dates, k/n
parameters, distractors, option order and the balanced answer letters) through
`derive_rng`, which hashes the seed with a label: no Python `hash()`, no set iteration, so
the output is byte-identical across processes. One backtest per strategy config (and per
alternative config of the comparative templates) is shared by all its questions; a
`BacktestCache` passed to `build` shares them across builds too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from tradebench.benchmarks.mcq.build.backtest import BacktestLog, run_backtest
from tradebench.benchmarks.mcq.build.balance import balance_letters
from tradebench.benchmarks.mcq.build.options import LETTERS, make_options, settle_decimals
from tradebench.benchmarks.mcq.build.pool import BacktestPool
from tradebench.benchmarks.mcq.build.preamble import question_text
from tradebench.benchmarks.mcq.build.strategies import PAPER_DEFAULTS, PARAM_GRIDS
from tradebench.benchmarks.mcq.build.templates import TEMPLATES, TIERS, NotApplicable, by_tier
from tradebench.benchmarks.mcq.config import (
    STRATEGY_NAMES,
    BacktestConfig,
    DataRef,
    Sizing,
    StrategyName,
    StrategySpec,
)
from tradebench.benchmarks.mcq.records import MCQRecord, question_id
from tradebench.errors import ConfigError

Mode = Literal["all_templates", "sample", "curated"]
Defaults = Literal["grid", "paper"]
CURATED_PER_TIER = 10


class BuildSpec(BaseModel):
    """What to build: data window, broker and sizing, mode, strategies and the seed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data: DataRef
    initial_cash: float = Field(default=50_000.0, gt=0, allow_inf_nan=False)
    commission_rate: float = Field(default=0.001, ge=0, lt=0.1)
    sizing: Sizing = Field(default_factory=Sizing)
    mode: Mode = "all_templates"
    num_questions: int = Field(default=0, ge=0, le=10_000)
    difficulty: Literal["easy", "medium", "hard", "all"] = "all"
    strategies: tuple[StrategyName, ...] = STRATEGY_NAMES
    defaults: Defaults = Field(
        default="grid",
        description="'grid': parameters drawn from each strategy's grid by the seed; "
        "'paper': the fixed PAPER_DEFAULTS set.",
    )
    params: dict[StrategyName, dict[str, float | int]] = Field(
        default_factory=dict,
        description="Per-strategy parameter overrides (`--param`), applied over the defaults.",
    )
    seed: int = 0


@dataclass(frozen=True)
class Skip:
    """A (template, strategy) that produced no question, and why."""

    template: str
    strategy: str
    reason: str


@dataclass(frozen=True)
class BuildResult:
    """The records in output order, what was skipped, and how many backtests ran."""

    records: tuple[MCQRecord, ...]
    skipped: tuple[Skip, ...]
    backtests: int


def derive_rng(seed: int, *labels: object) -> np.random.Generator:
    """A generator for one purpose: SHA-256 of the seed and labels, independent of hash()."""
    digest = hashlib.sha256("|".join(map(str, (seed, *labels))).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def strategy_config(spec: BuildSpec, name: StrategyName) -> BacktestConfig:
    """The backtest config of one strategy: grid draw (or paper defaults), then overrides.

    Raises:
        ConfigError: The resulting parameters are invalid for the strategy (one line).
    """
    if spec.defaults == "paper":
        params = dict(PAPER_DEFAULTS[name])
    else:
        grid = PARAM_GRIDS[name]
        params = dict(grid[int(derive_rng(spec.seed, "params", name).integers(len(grid)))])
    params.update(spec.params.get(name, {}))
    return BacktestConfig(
        data=spec.data,
        initial_cash=spec.initial_cash,
        commission_rate=spec.commission_rate,
        sizing=spec.sizing,
        strategy=StrategySpec(name=name, params=params),
    )


class BacktestCache:
    """Backtrader runs by config key, on one set of bars; share it across builds."""

    def __init__(self, bars: pd.DataFrame) -> None:
        self.bars = bars
        self.logs: dict[str, BacktestLog] = {}
        self.on_demand = 0
        """Backtests `run` had to run itself (not cached yet, not prefetched)."""

    def run(self, config: BacktestConfig) -> BacktestLog:
        """The log of `config` on the cache's bars, running backtrader on first use."""
        key = config.key()
        if key not in self.logs:
            self.on_demand += 1
            self.logs[key] = run_backtest(self.bars, config)
        return self.logs[key]

    def prefetch(self, configs: list[BacktestConfig], pool: BacktestPool) -> None:
        """Run the configs not cached yet, at once, in `pool`'s workers."""
        missing = {c.key(): c for c in configs if c.key() not in self.logs}
        logs = pool.run_all(self.bars, list(missing.values()))
        self.logs.update(zip(missing, logs, strict=True))


class _Wanted(Exception):
    """Raised by the discovery runner at a comparative template's second backtest."""


def _wanted_backtests(s: _Session, pairs: list[tuple[str, StrategyName]]) -> list[BacktestConfig]:
    """The second backtests the comparative templates of `pairs` will ask for: each maker
    runs on its own seeded generator up to its first uncached run, which is noted, not run.

    A maker is a function of (log, generator, runner), so the attempt made afterwards asks
    for the same config; `attempt` runs anything this missed, so it can only cost time."""
    wanted: dict[str, BacktestConfig] = {}

    def note(config: BacktestConfig) -> BacktestLog:
        if config.key() in s.cache.logs:
            return s.cache.logs[config.key()]
        wanted[config.key()] = config
        raise _Wanted

    for tname, sname in pairs:
        tpl = TEMPLATES[tname]
        if not tpl.comparative:
            continue
        log = s.cache.logs[s.configs[sname].key()]
        with contextlib.suppress(_Wanted):
            tpl.make(log, derive_rng(s.spec.seed, "question", tname, sname, 0), note)
    return list(wanted.values())


class _Session:
    """Runs each strategy's backtest once and turns (template, strategy, slot) into records."""

    def __init__(self, spec: BuildSpec, cache: BacktestCache) -> None:
        self.spec, self.cache = spec, cache
        self.configs = {name: strategy_config(spec, name) for name in spec.strategies}
        self.used: set[str] = set()

    def run(self, config: BacktestConfig) -> BacktestLog:
        """A cached backtest, counted as used by this build."""
        self.used.add(config.key())
        return self.cache.run(config)

    def attempt(self, tname: str, sname: StrategyName, slot: int) -> MCQRecord | Skip:
        tpl = TEMPLATES[tname]
        log = self.run(self.configs[sname])
        rng = derive_rng(self.spec.seed, "question", tname, sname, slot)
        inst = tpl.make(log, rng, self.run)
        if isinstance(inst, NotApplicable):
            return Skip(tname, sname, inst.reason)
        inst = settle_decimals(inst)
        opts = make_options(inst, rng)
        if isinstance(opts, str):
            return Skip(tname, sname, opts)
        text = question_text(log.config, inst.text, inst.answer)
        options = dict(zip(LETTERS, opts.texts, strict=True))
        return MCQRecord(
            id=question_id(text, options),
            question=text,
            options=options,
            answer=opts.letter,
            template=tname,
            tier=tpl.tier,
            strategy=sname,
            answer_kind=inst.answer.kind,
            params=inst.params,
            config=log.config,
            alternative=inst.alternative,
            seed=self.spec.seed,
        )


Tick = Callable[[], None]


def _noop() -> None:
    return None


def _split(results: list[MCQRecord | Skip]) -> tuple[list[MCQRecord], list[Skip]]:
    records = [r for r in results if isinstance(r, MCQRecord)]
    skips = [r for r in results if isinstance(r, Skip)]
    return records, skips


def _all_templates(s: _Session, tick: Tick, pool: BacktestPool) -> list[MCQRecord | Skip]:
    pairs = [(tpl.name, sname) for sname in s.spec.strategies for tpl in by_tier()]
    s.cache.prefetch([s.configs[sname] for sname in s.spec.strategies], pool)
    s.cache.prefetch(_wanted_backtests(s, pairs), pool)
    out: list[MCQRecord | Skip] = []
    for tname, sname in pairs:
        out.append(s.attempt(tname, sname, 0))
        tick()
    return out


def tier_quotas(total: int, tiers: tuple[str, ...]) -> dict[str, int]:
    """Questions per tier, as even as `total` allows (the first tiers take the remainder).

    Why: the paper's Appendix I splits a set evenly across its tiers (30 -> 10/10/10).
    """
    base, extra = divmod(total, len(tiers))
    return {tier: base + (1 if i < extra else 0) for i, tier in enumerate(tiers)}


def _sample(s: _Session, tick: Tick) -> list[MCQRecord | Skip]:
    spec = s.spec
    tiers = TIERS if spec.difficulty == "all" else (spec.difficulty,)
    out: list[MCQRecord | Skip] = []
    for tier, quota in tier_quotas(spec.num_questions, tiers).items():
        out += _sample_tier(s, tier, quota, tick)
    return out


def _sample_tier(s: _Session, tier: str, quota: int, tick: Tick) -> list[MCQRecord | Skip]:
    """Up to `quota` distinct questions of one tier, templates and strategies drawn uniformly."""
    spec = s.spec
    names = [t.name for t in by_tier() if t.tier == tier]
    rng = derive_rng(spec.seed, "sample", spec.difficulty, tier)
    out: list[MCQRecord | Skip] = []
    seen: set[tuple[str, str, str]] = set()
    slots: dict[tuple[str, str], int] = {}
    got = 0
    for _ in range(quota * 50):
        if got == quota:
            break
        tname = names[int(rng.integers(len(names)))]
        sname = spec.strategies[int(rng.integers(len(spec.strategies)))]
        slot = slots[(tname, sname)] = slots.get((tname, sname), -1) + 1
        result = s.attempt(tname, sname, slot)
        if isinstance(result, Skip):
            key = (tname, sname, "skip")
        else:
            alt = result.alternative.strategy.params if result.alternative else None
            key = (tname, sname, json.dumps([result.params, alt], sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        out.append(result)
        if isinstance(result, MCQRecord):
            got += 1
            tick()
    return out


def _curated_tier(s: _Session, tier: str, tick: Tick) -> list[MCQRecord | Skip]:
    rng = derive_rng(s.spec.seed, "curated", tier)
    names = [t.name for t in by_tier() if t.tier == tier]
    rank = {n: i for i, n in enumerate(rng.permutation(names).tolist())}
    strategies = [str(x) for x in rng.permutation(list(s.spec.strategies))]
    used = dict.fromkeys(names, 0)
    taken: list[tuple[str, str]] = []
    out: list[MCQRecord | Skip] = []
    for i in range(CURATED_PER_TIER * 3):
        if len(taken) == CURATED_PER_TIER:
            break
        sname = strategies[i % len(strategies)]
        for tname in sorted(names, key=lambda n: (used[n], rank[n])):
            if (tname, sname) in taken:
                continue
            result = s.attempt(tname, sname, 0)  # type: ignore[arg-type]
            out.append(result)
            if isinstance(result, MCQRecord):
                taken.append((tname, sname))
                used[tname] += 1
                tick()
                break
    return out


def build(
    spec: BuildSpec,
    bars: pd.DataFrame,
    tick: Tick = _noop,
    cache: BacktestCache | None = None,
    pool: BacktestPool | None = None,
) -> BuildResult:
    """Build questions as the spec says, answer letters balanced (`balance.balance_letters`).

    `tick` is called once per question attempted; `cache` (on the same bars) lets several
    builds share backtests, e.g. many seeds. An open `pool` runs the base pool's backtests
    (`--all-templates`) in its worker processes; the other modes choose each next backtest
    from the last question's outcome and run them here. The output does not depend on it.
    """
    if spec.mode == "sample" and spec.num_questions <= 0:
        raise ConfigError("--num-questions must be positive in sample mode")
    if not spec.strategies:
        raise ConfigError("no strategy selected")
    unused = sorted(set(spec.params) - set(spec.strategies))
    if unused:
        raise ConfigError(f"parameter overrides for {unused[0]}, which is not being built")
    if cache is not None and cache.bars is not bars:
        raise ConfigError("a BacktestCache serves only the bars it was made with")
    session = _Session(spec, cache if cache is not None else BacktestCache(bars))
    if spec.mode == "all_templates":
        results = _all_templates(session, tick, pool or BacktestPool(1))
    elif spec.mode == "sample":
        results = _sample(session, tick)
    else:
        results = [r for tier in TIERS for r in _curated_tier(session, tier, tick)]
    records, skips = _split(results)
    unique: dict[tuple[str, str, str], Skip] = {}
    for skip in skips:
        unique.setdefault((skip.template, skip.strategy, skip.reason), skip)
    balanced = balance_letters(records, derive_rng(spec.seed, "letters", spec.mode))
    return BuildResult(tuple(balanced), tuple(unique.values()), len(session.used))


def total_attempts(spec: BuildSpec) -> int:
    """How many ticks `build` will make at most (for a progress bar)."""
    if spec.mode == "all_templates":
        return len(TEMPLATES) * len(spec.strategies)
    if spec.mode == "sample":
        return spec.num_questions
    return CURATED_PER_TIER * len(TIERS)
