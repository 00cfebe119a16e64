"""Signal quality of a factor-model baseline over its evaluation window (offline).

Rebuilds the episode's agent from its recorded arguments, loads the same cached models
(each trained before the day it was first used: the window's first day, and each
retraining day with `retrain_every`), scores every day's tradable members with the
features the agent saw before each open, and compares the scores with the label realised
afterwards (close t+1 / close t - 1 for a decision before t's open). Table models are
scored over the panel at once; sequence models day by day through a `MarketView`, the
agent's own path. Reads the dataset: this runs after the episode, never inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tradebench.agents.factor.agent import TopkDropoutAgent, build_ml_agent
from tradebench.agents.factor.data import normalise_features
from tradebench.agents.factor.training import FittedModel, retrain_anchor
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.features.alpha import LOOKBACK, alpha_features, inputs_from_panel
from tradebench.features.style import member_masks
from tradebench.metrics.attribution_ic import SignalQuality, daily_ic, signal_quality
from tradebench.view import MarketView, to_day

__all__ = ["SignalReport", "evaluate_signal", "realised_labels", "score_days"]


@dataclass(frozen=True)
class SignalReport:
    """IC statistics of one factor-model episode and the model they belong to."""

    model: str
    model_key: str
    """Key of the first model (the one trained before the window)."""
    quality: SignalQuality
    valid: dict[str, Any]
    model_keys: tuple[str, ...] = ()
    """Every model used over the window, in order (one per retraining)."""


def _scores(dataset: Dataset, agent: Any, fitted: Any, days: np.ndarray) -> np.ndarray:
    """(D, N) scores of each day's candidates from features of the day before."""
    panel = dataset.panel
    lo = max(int(days[0]) - LOOKBACK, 0)
    feats = alpha_features(inputs_from_panel(panel, lo, int(days[-1]))).values
    rows = days - 1 - lo
    tradable = panel.listed[days - 1] & ~panel.suspended[days - 1]
    feats = feats[:, rows]
    if agent.spec.normalise:  # across the members of each feature row's day, as in training
        feats = normalise_features(feats, tradable & member_masks(panel, days - 1))
    candidates = member_masks(panel, days) & tradable
    out = np.full(candidates.shape, np.nan)
    d, n = np.nonzero(candidates)
    out[d, n] = fitted.scores(feats[:, d, n].T)
    return out


def evaluate_signal(
    dataset: Dataset, model: str, args: dict[str, Any], start: str, end: str
) -> SignalReport:
    """IC, rank IC and ICIR of `model` (built with `args`) over the days of [start, end].

    Raises:
        ConfigError: no trading days in the window, or the model cannot be rebuilt.
    """
    panel = dataset.panel
    days = np.flatnonzero((panel.dates >= to_day(start)) & (panel.dates <= to_day(end)))
    if days.size == 0 or days[0] == 0:
        raise ConfigError(f"no scorable trading days between {start} and {end}")
    agent = build_ml_agent(model, **args)
    first = panel.dates[days[0]]
    groups: dict[Any, list[int]] = {}
    for d in days:
        anchor = retrain_anchor(panel.dates[:d], panel.dates[d], first, agent.config.retrain_every)
        groups.setdefault(anchor, []).append(int(d))
    scores = np.full((days.size, len(panel.symbols)), np.nan)
    fitted_models = []
    at = 0
    for anchor, group in groups.items():
        rows = np.asarray(group)
        view = MarketView(panel, panel.dates[rows[0]], market=dataset.market)
        fitted = agent.fitted(view, anchor)
        fitted_models.append(fitted)
        scores[at : at + rows.size] = _group_scores(dataset, agent, fitted, rows)
        at += rows.size
    quality = signal_quality(*daily_ic(scores, realised_labels(panel, days)))
    first_model = fitted_models[0]
    return SignalReport(
        model,
        first_model.key,
        quality,
        dict(first_model.meta.get("valid") or {}),
        tuple(f.key for f in fitted_models),
    )


def realised_labels(panel: Any, days: np.ndarray) -> np.ndarray:
    """(D, N) return from each day's close to the next (the label of that day's decision)."""
    adj = panel.adjusted["adj_close"]
    label = np.full((days.size, len(panel.symbols)), np.nan)
    has_next = days + 1 < len(panel.dates)
    with np.errstate(invalid="ignore", divide="ignore"):
        label[has_next] = adj[days[has_next] + 1] / adj[days[has_next]] - 1.0
    return label


def score_days(
    dataset: Dataset, agent: TopkDropoutAgent, fitted: FittedModel, days: np.ndarray
) -> np.ndarray:
    """(D, N) scores `fitted` gives each day's tradable members (NaN elsewhere)."""
    return _group_scores(dataset, agent, fitted, days)


def _group_scores(
    dataset: Dataset, agent: TopkDropoutAgent, fitted: FittedModel, days: np.ndarray
) -> np.ndarray:
    if agent.spec.inputs == "table":
        return _scores(dataset, agent, fitted, days)
    panel = dataset.panel
    out = np.full((days.size, len(panel.symbols)), np.nan)
    for i, d in enumerate(days):
        view = MarketView(panel, panel.dates[d], market=dataset.market)
        day_scores = agent.scores(view, fitted)
        out[i, [view.column(s) for s in day_scores.index]] = day_scores.to_numpy()
    return out
