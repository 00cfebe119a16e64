"""The single-stock persona benchmark as a Prime Intellect `verifiers` environment.

Targets verifiers 0.3.x (`pip install 'tradebench[verifiers]'`), whose classic API
(`vf.load_environment`, `vf.MultiTurnEnv`, `vf.Rubric`) lives in `verifiers.legacy`; 0.4
dropped it for `verifiers.v1` tasksets (see `verifiers04_env`; both share
`verifiers_core`). verifiers is imported only when an environment is built. Load it as
`vf.load_environment("tradebench.integrations.verifiers_env", ...)`.

One dataset row per task (symbol x window x persona). A rollout is multi-turn: the model
answers each day's message with one JSON decision, unreadable replies get up to `nudges`
format nudges and then count as an invalid hold, exactly as in `tradebench run`. As there,
each day is asked in a fresh conversation (the system prompt and that day's message; a
nudge continues the day's exchange): a model sees no earlier day, so a rollout is the same
episode `tradebench run` plays, and scores the same. The rollout's completion still holds
every day's exchange in order. The
rubric gives the composite weight 1 and each component weight 0; the raw per-step series,
scores and guard counters are written to the rollout's `info["tradebench"]`.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from tradebench.benchmarks.single_stock.config import DEFAULT_WINDOW, Persona, PriceMode, Task
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

VERIFIERS_REQUIREMENT = "verifiers>=0.3.0,<0.4"
ENV_ID = "tradebench.integrations.verifiers_env"
TASK_KEY = "tradebench_task"  # not `task`: verifiers 0.3.1 reads info["task"] as its own
END_MESSAGE = "The episode is over. Thank you."

__all__ = [
    "ENV_ID",
    "VERIFIERS_REQUIREMENT",
    "EnvSettings",
    "PendingStep",
    "load_environment",
    "on_reply",
]


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
            " (for 0.4 use the taskset `tradebench-single-stock`, docs/single_stock.md)"
        )
    return vf


def finalize(state: Any) -> dict[str, Any]:
    """Score the rollout once (unanswered days count as invalid holds) into `info`."""
    info = state["info"]
    if INFO_KEY not in info or "scores" not in info[INFO_KEY]:
        info[INFO_KEY] = episode_record(state["tb_episode"])
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

        async def get_prompt_messages(self, state: Any) -> Any:
            """The next request: after a settled day, the system prompt and the new day
            alone (as `tradebench run` asks each day); after a nudge, the day so far."""
            if not state["trajectory"]:
                return state["prompt"]
            last = state["trajectory"][-1]
            messages = [*last["prompt"], *last["completion"]]
            reply = list(await self.env_response(messages, state))
            return [state["prompt"][0], *reply] if state["tb_new_day"] else [*messages, *reply]

        async def render_completion(self, state: Any) -> None:
            """Every day's exchange after the first prompt, in order (and the last word)."""
            shown, out = list(state["prompt"]), []
            for step in state["trajectory"]:
                prompt = list(step["prompt"])
                out += prompt[len(shown) :] if prompt[: len(shown)] == shown else prompt[1:]
                out += list(step["completion"])
                shown = [*prompt, *step["completion"]]
            state["completion"] = [*out, *(state.get("final_env_response") or [])]

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            last = messages[-1]
            content = last.get("content") if isinstance(last, dict) else last.content
            text = content if isinstance(content, str) else ""
            episode = state["tb_episode"]
            outcome = on_reply(episode, state["tb_pending"], text, self.tb_settings.options.nudges)
            if outcome.applied:
                state["tb_pending"] = PendingStep()
            state["tb_new_day"] = outcome.applied
            out = [vf.UserMessage(content=outcome.message or END_MESSAGE)]
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

    settings, tasks = build_settings(
        dataset,
        cells=cells,
        symbols=symbols,
        personas=personas,
        start=start,
        end=end,
        episode_length=episode_length,
        nudges=nudges,
        mask=mask,
        seed=seed,
        price_mode=price_mode,
        prompt_version=prompt_version,
    )
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
