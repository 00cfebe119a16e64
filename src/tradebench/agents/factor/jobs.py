"""Training jobs of a run spec: every factor-model agent x window x retraining day.

`plan_jobs` lists the models a `tradebench run` of the spec would train, with the same
arguments, anchors and cache folder, so training them first (`tradebench baselines
train`) fills the cache the run then reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tradebench.agents.factor.agent import FACTOR_MODELS, TopkDropoutAgent, build_ml_agent
from tradebench.agents.factor.progress import Progress, no_progress
from tradebench.agents.factor.training import FittedModel, retrain_anchor, train_or_load
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.view import MarketView, to_day

__all__ = ["TrainJob", "plan_jobs", "run_job", "window_anchors"]


@dataclass(frozen=True)
class TrainJob:
    """One model to train: an agent of the spec, for one anchor (first or retraining day)."""

    agent: str
    model: str
    anchor: np.datetime64
    built: TopkDropoutAgent
    dataset: Dataset


def window_anchors(dates: np.ndarray, start: Any, end: Any, months: int | None) -> list[Any]:
    """The distinct training anchors an episode over [start, end] uses, in order."""
    days = np.flatnonzero((dates >= to_day(start)) & (dates <= to_day(end)))
    if days.size == 0:
        raise ConfigError(f"no trading days between {start} and {end} in this dataset")
    first = dates[days[0]]
    anchors: list[Any] = []
    for d in days:
        a = retrain_anchor(dates[:d], dates[d], first, months)
        if not anchors or anchors[-1] != a:
            anchors.append(a)
    return anchors


def plan_jobs(
    agents: list[tuple[str, str, dict[str, Any]]],
    windows: list[tuple[Any, Any]],
    dataset: Dataset,
    only: list[str] | None = None,
) -> list[TrainJob]:
    """Jobs for (name, baseline, args) agents that are factor models, over `windows`.

    Raises:
        ConfigError: `only` names an agent that is not a factor model of the spec, or the
            spec has none.
    """
    factor = [(n, b, a) for n, b, a in agents if b in FACTOR_MODELS]
    if only:
        missing = sorted(set(only) - {n for n, _, _ in factor})
        if missing:
            raise ConfigError(f"--only names no factor-model agent of the spec: {missing}")
        factor = [x for x in factor if x[0] in set(only)]
    if not factor:
        raise ConfigError("the spec has no factor-model agents (baseline: lightgbm, lstm, ...)")
    jobs = []
    for name, baseline, args in factor:
        built = build_ml_agent(baseline, **args)
        for start, end in windows:
            for anchor in window_anchors(
                dataset.panel.dates, start, end, built.config.retrain_every
            ):
                jobs.append(TrainJob(name, baseline, anchor, built, dataset))
    return jobs


def run_job(job: TrainJob, progress: Progress = no_progress) -> FittedModel:
    """Train (or load) the job's model into the agent's cache folder."""
    cfg = job.built.config
    view = MarketView(job.dataset, job.anchor)
    folder = Path(cfg.cache_dir) if cfg.cache_dir else None
    return train_or_load(view, job.anchor, job.built.spec, cfg, cfg.seed, folder, progress)
