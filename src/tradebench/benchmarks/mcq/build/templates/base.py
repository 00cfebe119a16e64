"""Template protocol, answer value objects and the registry the three tiers fill.

A template turns one backtest log and a seeded generator into a question instance (text,
answer, parameters) or a `NotApplicable` with the reason. A comparative template also gets
a `Runner` that runs a second backtrader backtest (alternative parameters); the instance
carries that backtest's config so the record stores it. Its docstring is its exact
definition: `docs/mcq.md` quotes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from tradebench.benchmarks.mcq.build.backtest import BacktestLog, run_backtest
from tradebench.benchmarks.mcq.config import BacktestConfig

Tier = Literal["easy", "medium", "hard"]
TIERS: tuple[Tier, ...] = ("easy", "medium", "hard")
AnswerKind = Literal["number", "integer", "date", "choice", "composite"]

# The four states of the account on a given day (strategy_action_on_date options).
ACTION_LABELS: tuple[str, ...] = (
    "a buy order filled at that day's open",
    "a sell order filled at that day's open",
    "no order filled; a long position was held",
    "no order filled; the account was flat",
)


@dataclass(frozen=True)
class Answer:
    """The correct answer: its kind, raw value, display decimals and unit suffix."""

    kind: AnswerKind
    value: float | int | str
    decimals: int = 2
    unit: str = ""


@dataclass(frozen=True)
class Instance:
    """One sampled question before options: text, answer, parameters, and the candidate
    distractors of a date or composite answer (plausible dates, alternative answers)."""

    text: str
    answer: Answer
    params: dict[str, Any] = field(default_factory=dict)
    candidates: tuple[str, ...] = ()
    alternative: BacktestConfig | None = None


@dataclass(frozen=True)
class NotApplicable:
    """Why a template cannot produce an honest question for this backtest."""

    reason: str


Result = Instance | NotApplicable
Runner = Callable[[BacktestConfig], BacktestLog]
"""Runs (or returns the cached) backtrader backtest of a config on the same bars."""
Maker = Callable[[BacktestLog, np.random.Generator], Result]
ComparativeMaker = Callable[[BacktestLog, np.random.Generator, Runner], Result]


@dataclass(frozen=True)
class Template:
    """A registered template: name, tier, the maker and its definition (docstring)."""

    name: str
    tier: Tier
    maker: Maker | ComparativeMaker
    definition: str
    comparative: bool = False

    def make(
        self, log: BacktestLog, rng: np.random.Generator, runner: Runner | None = None
    ) -> Result:
        """Sample one instance; a comparative template runs its second backtest via `runner`
        (default: an uncached backtrader run on the log's bars)."""
        if not self.comparative:
            return self.maker(log, rng)  # type: ignore[call-arg]
        run = runner or (lambda config: run_backtest(log.bars, config))
        return self.maker(log, rng, run)  # type: ignore[call-arg]


TEMPLATES: dict[str, Template] = {}


def _register(tier: Tier, comparative: bool, fn: Callable[..., Result]) -> None:
    name = fn.__name__
    if name in TEMPLATES:
        raise ValueError(f"template {name!r} registered twice")
    doc = " ".join((fn.__doc__ or "").split())
    TEMPLATES[name] = Template(name, tier, fn, doc, comparative)


def template(tier: Tier) -> Callable[[Maker], Maker]:
    """Register a maker under its function name in `tier`; its docstring is the definition."""

    def register(fn: Maker) -> Maker:
        _register(tier, False, fn)
        return fn

    return register


def comparative(tier: Tier) -> Callable[[ComparativeMaker], ComparativeMaker]:
    """Register a comparative maker (it also receives a `Runner`) in `tier`."""

    def register(fn: ComparativeMaker) -> ComparativeMaker:
        _register(tier, True, fn)
        return fn

    return register


def by_tier() -> list[Template]:
    """All templates, easy first, then medium, then hard (registration order within a tier)."""
    return sorted(TEMPLATES.values(), key=lambda t: TIERS.index(t.tier))


def iso(ts: pd.Timestamp | np.datetime64) -> str:
    """A date as YYYY-MM-DD."""
    return pd.Timestamp(ts).strftime("%Y-%m-%d")


def pick(rng: np.random.Generator, index: pd.Index) -> Any:
    """One element of a non-empty index, uniformly."""
    return index[int(rng.integers(len(index)))]


def ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def is_pair(log: BacktestLog) -> bool:
    """True when the strategy has a fast and a slow line (crossover strategies)."""
    return "fast" in log.snapshots.columns


def no_pair(log: BacktestLog) -> NotApplicable:
    """The standard refusal for crossover-only templates."""
    return NotApplicable(f"{log.config.strategy.name} has no fast/slow line pair")
