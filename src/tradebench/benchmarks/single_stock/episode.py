"""One single-stock episode as a stepper: plan the days, observe, apply decisions, settle.

Both drivers build it with `build_episode` and step it: the benchmark's `run_episode`
(one tool loop per step, `tradebench run`) and the verifiers environment (one chat turn per
step). The agent side only ever gets `context()`, built
through `MarketView`; settlement prices are the environment's own and never shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tradebench.benchmarks.single_stock.agents import DecisionContext, StepDecision
from tradebench.benchmarks.single_stock.config import (
    PriceMode,
    SingleStockOptions,
    Stance,
    Task,
    resolve_price_mode,
)
from tradebench.benchmarks.single_stock.ledger import Ledger, settle
from tradebench.benchmarks.single_stock.observation import (
    RECENT_SHOWN,
    Observation,
    PastDecision,
    market_part,
    render_user,
    to_date,
)
from tradebench.benchmarks.single_stock.personas import active_stance
from tradebench.benchmarks.single_stock.prompt_files import PromptSet, ReplyFormat, system_prompt
from tradebench.benchmarks.single_stock.scoring import SingleStockScores, score_episode
from tradebench.benchmarks.single_stock.series import build_series
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.masking import Masker, MaskLevel, build_masker
from tradebench.view import MarketView


@dataclass(frozen=True)
class EpisodePlan:
    """The decision days of a task and their settlement prices (environment-side)."""

    task: Task
    days: np.ndarray
    """Decision days (datetime64[D])."""
    settle_days: np.ndarray
    """The next trading day after each decision day (also the view's `as_of`)."""
    prices: np.ndarray
    """Adjusted close on each decision day, P[i]."""
    next_prices: np.ndarray
    """Adjusted close on each settle day, P[i+1]."""


def plan_episode(ds: Dataset, task: Task, episode_length: int | None) -> EpisodePlan:
    """Decision days: the first `episode_length` trading days of the window that have a
    next trading day in the dataset (None = all of them).

    Raises:
        ConfigError: Unknown symbol, no history before the window, or too few days.
    """
    panel = ds.panel
    col = panel.column(task.symbol)
    if col < 0:
        raise ConfigError(f"symbol {task.symbol!r} is not in the dataset; import it first")
    lo, hi = np.datetime64(task.start, "D"), np.datetime64(task.end, "D")
    idx = np.flatnonzero((panel.dates >= lo) & (panel.dates <= hi))
    idx = idx[idx + 1 < len(panel.dates)]
    if idx.size == 0 or idx[0] == 0:
        raise ConfigError(
            f"window {task.start}..{task.end} has no decision day with history before it and "
            f"a next trading day after it in this dataset ({panel.dates[0]}..{panel.dates[-1]})"
        )
    if episode_length is not None:
        if episode_length > idx.size:
            raise ConfigError(
                f"episode_length {episode_length} exceeds the {idx.size} decision days of "
                f"window {task.start}..{task.end}; shorten it or widen the window"
            )
        idx = idx[:episode_length]
    close = panel.adjusted["adj_close"]
    return EpisodePlan(
        task=task,
        days=panel.dates[idx],
        settle_days=panel.dates[idx + 1],
        prices=np.asarray(close[idx, col], dtype=np.float64),
        next_prices=np.asarray(close[idx + 1, col], dtype=np.float64),
    )


class SingleStockEpisode:
    """Mutable progress of one episode: decisions so far, the next observation, scores."""

    def __init__(
        self,
        ds: Dataset,
        plan: EpisodePlan,
        masker: Masker,
        prompts: PromptSet,
        price_mode: PriceMode | None = None,
        reply_format: ReplyFormat = "tool",
    ) -> None:
        """Prepare the episode; nothing is decided yet. `price_mode` None: rebased when the
        masker hides stocks, actual otherwise (the resolved mode is `self.price_mode`)."""
        self.ds, self.plan, self.masker, self.prompts = ds, plan, masker, prompts
        self.price_mode: PriceMode = resolve_price_mode(price_mode, masker.level)
        self.task = plan.task
        self.asset = masker.symbol_label(self.task.symbol)
        self.system = masker.mask_text(
            system_prompt(prompts, self.task.persona, self.asset, reply_format)
        )
        self.rebase = self._rebase() if self.price_mode == "rebased" else None
        self.decisions: list[StepDecision] = []

    def _rebase(self) -> tuple[float, float]:
        """(close, volume) of the last day before the episode, read through the gate."""
        view = MarketView(self.ds, as_of=self.plan.days[0])
        bars = view.history(self.task.symbol, 1, adjusted=True)
        return float(bars["close"].iloc[-1]), float(bars["volume"].iloc[-1]) or 1.0

    @property
    def total(self) -> int:
        """Decisions in the episode."""
        return len(self.plan.days)

    @property
    def step(self) -> int:
        """Decisions taken so far (0-based index of the next one)."""
        return len(self.decisions)

    @property
    def done(self) -> bool:
        """True when every decision day has a decision."""
        return self.step >= self.total

    def ledger(self) -> Ledger:
        """The settled ledger of the decisions so far."""
        k = self.step
        actions = [d.action for d in self.decisions]
        return settle(actions, self.plan.prices[:k], self.plan.next_prices[:k])

    def cum_return(self) -> float:
        """Simple cumulative strategy return known at the next decision."""
        ledger = self.ledger()
        return float(ledger.wealth[-1] - 1.0) if self.step else 0.0

    def stance(self) -> Stance:
        """The persona's stance at the next decision."""
        return active_stance(self.task.persona, self.cum_return())

    def observation(self) -> Observation:
        """The next decision's observation, through `MarketView(as_of=next day)`."""
        k = self.step
        day = to_date(self.plan.days[k])
        view = MarketView(self.ds, as_of=self.plan.settle_days[k])
        ledger = self.ledger()
        first = max(0, k - RECENT_SHOWN)
        recent = [
            PastDecision(
                day=to_date(self.plan.days[j]),
                action=self.decisions[j].action,
                position=int(ledger.positions[j]),
                earned=float(ledger.earned[j]),
            )
            for j in range(first, k)
        ]
        return Observation(
            day=day,
            step=k + 1,
            total=self.total,
            position=int(ledger.positions[-1]) if k else 0,
            cum_return=self.cum_return(),
            stance=self.stance(),
            recent=recent,
            **market_part(view, self.task.symbol, day),
        )

    def context(self) -> DecisionContext:
        """Observation plus the masked system prompt and daily message."""
        obs = self.observation()
        user = render_user(
            obs, self.masker, self.prompts, self.asset, self.task.persona, self.rebase
        )
        return DecisionContext(observation=obs, system=self.system, user=user)

    def apply(self, decision: StepDecision) -> None:
        """Record the next decision (the ledger settles it on the next day's close)."""
        if self.done:
            raise ConfigError("the episode is over: no decision day left")
        self.decisions.append(decision)

    def series(self) -> pd.DataFrame:
        """The per-step series of the decisions so far (see `series.SERIES_COLUMNS`)."""
        return build_series(self.plan, self.decisions, self.ledger())

    def scores(self) -> SingleStockScores:
        """The finished episode's scores: the one scoring path of `tradebench run` and the
        verifiers environments alike.

        Raises:
            ConfigError: Decision days are left.
        """
        if not self.done:
            raise ConfigError(f"the episode has {self.total - self.step} decision days left")
        ledger = self.ledger()
        valid = np.array([d.valid for d in self.decisions], dtype=bool)
        return score_episode(ledger.earned, ledger.asset_log_returns, valid)


def build_episode(
    ds: Dataset,
    task: Task,
    options: SingleStockOptions,
    prompts: PromptSet,
    mask: MaskLevel,
    seed: int,
    episode_id: str,
    reply_format: ReplyFormat = "tool",
) -> SingleStockEpisode:
    """A fresh episode of `task`: its plan, and a masker seeded by `seed` and `episode_id`.

    Raises:
        ConfigError: Unknown symbol, no history before the window, or too few days.
    """
    plan = plan_episode(ds, task, options.episode_length)
    panel = ds.panel
    masker = build_masker(mask, panel.symbols, panel.dates, plan.days[0], seed, episode_id)
    return SingleStockEpisode(ds, plan, masker, prompts, options.price_mode, reply_format)
