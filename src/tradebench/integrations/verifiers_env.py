"""The single-stock persona benchmark as a Prime Intellect `verifiers` environment.

Targets verifiers 0.3.x (`pip install 'tradebench[verifiers]'`), whose classic API
(`vf.load_environment`, `vf.MultiTurnEnv`, `vf.Rubric`) lives in `verifiers.legacy`; 0.4
dropped it for `verifiers.v1` tasksets. verifiers is imported only when an environment
is built. Load it as `vf.load_environment("tradebench.integrations.verifiers_env", ...)`.

One dataset row per task (symbol x window x persona). A rollout is multi-turn: the model
answers each day's message with one JSON decision, unreadable replies get up to `nudges`
format nudges and then count as an invalid hold, exactly as in `tradebench run`. The
rubric gives the composite weight 1 and each component weight 0; the raw per-step series,
scores and guard counters are written to the rollout's `info["tradebench"]`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from tradebench.benchmarks.single_stock.agents import StepDecision
from tradebench.benchmarks.single_stock.config import (
    DEFAULT_WINDOW,
    Persona,
    PriceMode,
    SingleStockOptions,
    Task,
    resolve_tasks,
)
from tradebench.benchmarks.single_stock.decision import UnreadableReply, parse_reply_text
from tradebench.benchmarks.single_stock.episode import SingleStockEpisode, build_episode
from tradebench.benchmarks.single_stock.prompt_files import PromptSet, load_prompts, nudge_text
from tradebench.benchmarks.single_stock.scoring import score_episode
from tradebench.benchmarks.single_stock.series import guard_totals, series_records
from tradebench.data.dataset import Dataset, load_dataset
from tradebench.errors import ConfigError
from tradebench.masking import MaskLevel

VERIFIERS_REQUIREMENT = "verifiers>=0.3.0,<0.4"
ENV_ID = "tradebench.integrations.verifiers_env"
INFO_KEY = "tradebench"
TASK_KEY = "tradebench_task"  # not `task`: verifiers 0.3.1 reads info["task"] as its own
COMPONENTS = ("cum_return", "sharpe", "stability", "discipline")
END_MESSAGE = "The episode is over. Thank you."

__all__ = ["ENV_ID", "VERIFIERS_REQUIREMENT", "EnvSettings", "load_environment"]


def _verifiers() -> Any:
    """Import verifiers 0.3.x, or fail with the install command."""
    try:
        import verifiers as vf
    except ImportError:
        raise ConfigError(
            f"verifiers is not installed; pip install 'tradebench[verifiers]' "
            f"({VERIFIERS_REQUIREMENT})"
        ) from None
    major_minor = tuple(int(p) for p in vf.__version__.split(".")[:2] if p.isdigit())
    if major_minor != (0, 3):
        raise ConfigError(
            f"verifiers {vf.__version__} is installed; this adapter needs {VERIFIERS_REQUIREMENT}"
        )
    return vf


@dataclass(frozen=True)
class EnvSettings:
    """Everything a rollout needs to rebuild its episode from a dataset row."""

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

    message: str
    """The next message to the model: a format nudge, the next day, or the end."""
    applied: bool
    """True when the reply settled the day's decision (the pending counters restart)."""


def on_reply(
    episode: SingleStockEpisode, pending: PendingStep, text: str, nudges: int
) -> ReplyOutcome:
    """Count one model reply into `pending` and apply the decision once it is settled.

    A reply that holds no valid decision gets a nudge while nudges remain, else the step
    becomes an invalid `hold`.
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
    return ReplyOutcome(END_MESSAGE if episode.done else episode.context().user, applied=True)


def finalize(state: Any) -> dict[str, Any]:
    """Score the rollout once (unanswered days count as invalid holds) into `info`."""
    info = state["info"]
    if INFO_KEY in info and "scores" in info[INFO_KEY]:
        return info[INFO_KEY]
    episode: SingleStockEpisode = state["tb_episode"]
    while not episode.done:
        episode.apply(StepDecision(action="hold", valid=False))
    series = episode.series()
    ledger = episode.ledger()
    scores = score_episode(ledger.earned, ledger.asset_log_returns, series["valid"].to_numpy())
    info[INFO_KEY] = {
        "task": episode.task.model_dump(mode="json"),
        "prompt_sha256": episode.prompts.sha256,
        "price_mode": episode.price_mode,
        "series": series_records(series),
        "scores": json.loads(scores.model_dump_json()),
        "guards": guard_totals(series),
    }
    return info[INFO_KEY]


async def composite(state: Any, **kwargs: Any) -> float:
    """The composite score of the rollout (weight 1)."""
    return float(finalize(state)["scores"]["composite"])


def _component(name: str) -> Any:
    async def component(state: Any, **kwargs: Any) -> float:
        return float(finalize(state)["scores"]["components"][name])

    component.__name__ = name
    component.__doc__ = f"The `{name}` component (weight 0, reported as a metric)."
    return component


def _env_class(vf: Any) -> type:
    """The `MultiTurnEnv` subclass, defined once verifiers is imported."""

    class SingleStockEnv(vf.MultiTurnEnv):
        """Each turn: the model's JSON decision in, the next day's message out."""

        def __init__(self, settings: EnvSettings, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.tb_settings = settings

        async def setup_state(self, state: Any) -> Any:
            task = Task.model_validate(state["info"][TASK_KEY])
            state["tb_episode"] = self.tb_settings.episode(task)
            state["tb_pending"] = PendingStep()
            return state

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            last = messages[-1]
            content = last.get("content") if isinstance(last, dict) else last.content
            text = content if isinstance(content, str) else ""
            episode = state["tb_episode"]
            outcome = on_reply(episode, state["tb_pending"], text, self.tb_settings.options.nudges)
            if outcome.applied:
                state["tb_pending"] = PendingStep()
            out = [vf.UserMessage(content=outcome.message)]
            if episode.done:
                finalize(state)
                state["final_env_response"] = out
            return out

    return SingleStockEnv


def _rows(settings: EnvSettings, tasks: list[Task]) -> list[dict[str, Any]]:
    rows = []
    for task in tasks:
        context = settings.episode(task).context()
        prompt = [
            {"role": "system", "content": context.system},
            {"role": "user", "content": context.user},
        ]
        info = {TASK_KEY: task.model_dump(mode="json")}
        rows.append({"prompt": prompt, "answer": "", "info": json.dumps(info)})
    return rows


def load_environment(
    dataset: str | Path,
    symbols: list[str] | None = None,
    personas: list[Persona] | None = None,
    start: str | date = DEFAULT_WINDOW[0],
    end: str | date = DEFAULT_WINDOW[1],
    cells: list[str] | None = None,
    episode_length: int | None = 50,
    nudges: int = 1,
    mask: MaskLevel = "bright",
    seed: int = 0,
    price_mode: PriceMode | None = None,
    prompt_version: str = "v1",
    **env_kwargs: Any,
) -> Any:
    """Build the verifiers environment of the single-stock tasks.

    Args:
        dataset: A tradebench dataset folder holding the symbols as bars.
        symbols, personas: Symbols traded over [start, end] and the personas (default: the
            four FinMem cells, all three personas: 12 tasks).
        start, end: The symbols' window (both ends inclusive).
        cells: Named cells (`tsla_main`, ...) instead of or beside `symbols`.
        episode_length: Decisions per rollout (None = the whole window).
        nudges: Format nudges per decision after an unreadable reply.
        mask, seed: Masking level and the seed of its aliases.
        price_mode, prompt_version: As in the run spec's `single_stock` block (price_mode
            None: rebased when `mask` hides stocks, actual otherwise).
        **env_kwargs: Passed to `vf.MultiTurnEnv` (e.g. `max_concurrent`).

    Raises:
        ConfigError: verifiers 0.3.x is missing, or the tasks do not fit the dataset.
    """
    vf = _verifiers()
    from datasets import Dataset as HFDataset

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
    tasks = resolve_tasks(options, [window])
    steps = settings.episode(tasks[0]).total if tasks else 1
    rubric = vf.Rubric(
        funcs=[composite, *(_component(n) for n in COMPONENTS)],
        weights=[1.0, *(0.0 for _ in COMPONENTS)],
    )
    env_kwargs.setdefault("max_turns", steps * (1 + nudges) + 1)
    return _env_class(vf)(
        settings,
        eval_dataset=HFDataset.from_list(_rows(settings, tasks)),
        rubric=rubric,
        env_id=ENV_ID,
        **env_kwargs,
    )
