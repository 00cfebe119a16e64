"""The verifiers-free core of the single-stock verifiers environments (0.3 and 0.4).

Both adapters drive the benchmark's own `SingleStockEpisode` one chat turn per decision:
this module builds the settings and tasks from the environment's knobs, counts each model
reply into the day's decision (nudges, invalid holds) and turns a finished episode into
the scores and the `info` record. Nothing here imports verifiers, so the turn logic is
tested in the project's own interpreter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from tradebench.benchmarks.single_stock.agents import StepDecision
from tradebench.benchmarks.single_stock.config import (
    Persona,
    PriceMode,
    SingleStockOptions,
    Task,
    resolve_tasks,
)
from tradebench.benchmarks.single_stock.decision import UnreadableReply, parse_reply_text
from tradebench.benchmarks.single_stock.episode import SingleStockEpisode, build_episode
from tradebench.benchmarks.single_stock.prompt_files import PromptSet, load_prompts, nudge_text
from tradebench.benchmarks.single_stock.series import guard_totals, series_records
from tradebench.data.dataset import Dataset, load_dataset
from tradebench.masking import MaskLevel

INFO_KEY = "tradebench"
COMPONENTS = ("cum_return", "sharpe", "stability", "discipline")

__all__ = [
    "COMPONENTS",
    "INFO_KEY",
    "EnvSettings",
    "PendingStep",
    "ReplyOutcome",
    "build_settings",
    "episode_record",
    "on_reply",
]


@dataclass(frozen=True)
class EnvSettings:
    """Everything a rollout needs to rebuild its episode from a task."""

    ds: Dataset
    options: SingleStockOptions
    prompts: PromptSet
    mask: MaskLevel
    seed: int

    def episode(self, task: Task) -> SingleStockEpisode:
        """A fresh episode of `task` whose daily messages ask for JSON replies."""
        ident = f"verifiers_{task.persona}_{self.mask}_{task.cell}_s{self.seed}"
        return build_episode(
            self.ds, task, self.options, self.prompts, self.mask, self.seed, ident, "json"
        )


def build_settings(
    dataset: str | Path,
    *,
    cells: list[str] | None,
    symbols: list[str] | None,
    personas: list[Persona] | None,
    start: str | date,
    end: str | date,
    episode_length: int | None,
    nudges: int,
    mask: MaskLevel,
    seed: int,
    price_mode: PriceMode | None,
    prompt_version: str,
) -> tuple[EnvSettings, list[Task]]:
    """The settings and the task list (cells, then symbols over [start, end], x personas),
    validated by the benchmark's own options model.

    Raises:
        ConfigError: The dataset cannot be read.
        ValueError: Unknown cells or personas, or nothing to run.
    """
    defaults = SingleStockOptions()
    options = SingleStockOptions(
        cells=cells,
        symbols=symbols or [],
        personas=personas or defaults.personas,
        episode_length=episode_length,
        nudges=nudges,
        price_mode=price_mode,
        prompt_version=prompt_version,
    )
    settings = EnvSettings(load_dataset(dataset), options, load_prompts(prompt_version), mask, seed)
    window = (date.fromisoformat(str(start)), date.fromisoformat(str(end)))
    return settings, resolve_tasks(options, [window])


@dataclass
class PendingStep:
    """Counters of the decision being asked for (reset after each applied decision)."""

    attempts: int = 0
    nudges: int = 0
    parse_failures: int = 0
    empty_replies: int = 0


@dataclass(frozen=True)
class ReplyOutcome:
    """What one model reply led to."""

    message: str | None
    """The next message to the model: a format nudge or the next day (None: it is over)."""
    applied: bool
    """True when the reply settled the day's decision (the pending counters restart)."""


def on_reply(
    episode: SingleStockEpisode, pending: PendingStep, text: str, nudges: int
) -> ReplyOutcome:
    """Count one model reply into `pending` and apply the decision once it is settled.

    A reply that holds no valid decision gets a nudge while nudges remain, else the step
    becomes an invalid `hold`, exactly as in `tradebench run`.
    """
    pending.attempts += 1
    try:
        args = parse_reply_text(text)
    except UnreadableReply as exc:
        pending.parse_failures += 1
        pending.empty_replies += not (text or "").strip()
        if pending.nudges < nudges:
            pending.nudges += 1
            return ReplyOutcome(nudge_text(episode.prompts, str(exc)), applied=False)
        args = None
    decision = StepDecision(
        action=args.action if args else "hold",
        valid=args is not None,
        sent=args.action if args else None,
        reason=args.reason if args else "",
        confidence=args.confidence if args else None,
        attempts=pending.attempts,
        nudges=pending.nudges,
        parse_failures=pending.parse_failures,
        empty_replies=pending.empty_replies,
    )
    episode.apply(decision)
    return ReplyOutcome(None if episode.done else episode.context().user, applied=True)


def episode_record(episode: SingleStockEpisode) -> dict[str, Any]:
    """Settle the episode (days left unanswered count as invalid holds) and return the
    `info` record: the task, prompt hash, price mode, raw per-step series, scores, guards."""
    while not episode.done:
        episode.apply(StepDecision(action="hold", valid=False))
    series = episode.series()
    scores = episode.scores()
    return {
        "task": episode.task.model_dump(mode="json"),
        "prompt_sha256": episode.prompts.sha256,
        "price_mode": episode.price_mode,
        "series": series_records(series),
        "scores": json.loads(scores.model_dump_json()),
        "guards": guard_totals(series),
    }
