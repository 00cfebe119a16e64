"""Signal quality of a factor-model baseline over its evaluation window (offline).

Rebuilds the episode's agent from its recorded arguments, loads the same cached model
(trained before the window), scores every day's tradable members with the features the
agent saw before each open, and compares the scores with the label realised afterwards
(close t+1 / close t - 1 for a decision before t's open). Reads the dataset: this runs
after the episode, never inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tradebench.agents.factor.agent import build_ml_agent
from tradebench.agents.factor.data import normalise_features
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.features.alpha import LOOKBACK, alpha_features, inputs_from_panel
from tradebench.features.style import member_masks
from tradebench.metrics.attribution_ic import SignalQuality, daily_ic, signal_quality
from tradebench.view import MarketView, to_day

__all__ = ["SignalReport", "evaluate_signal"]


@dataclass(frozen=True)
class SignalReport:
    """IC statistics of one factor-model episode and the model they belong to."""

    model: str
    model_key: str
    quality: SignalQuality
    valid: dict[str, Any]


def _scores(dataset: Dataset, agent: Any, fitted: Any, days: np.ndarray) -> np.ndarray:
    """(D, N) scores of each day's candidates from features of the day before."""
    panel = dataset.panel
    lo = max(int(days[0]) - LOOKBACK, 0)
    feats = alpha_features(inputs_from_panel(panel, lo, int(days[-1]))).values
    rows = days - 1 - lo
    tradable = panel.listed[days - 1] & ~panel.suspended[days - 1]
    feats = feats[:, rows]
    if agent.spec.normalise:
        feats = normalise_features(feats, tradable)
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
    fitted = agent.fitted(MarketView(panel, first, market=dataset.market), first)
    scores = _scores(dataset, agent, fitted, days)
    adj = panel.adjusted["adj_close"]
    label = np.full(scores.shape, np.nan)
    has_next = days + 1 < len(panel.dates)
    with np.errstate(invalid="ignore", divide="ignore"):
        label[has_next] = adj[days[has_next] + 1] / adj[days[has_next]] - 1.0
    quality = signal_quality(*daily_ic(scores, label))
    return SignalReport(model, fitted.key, quality, dict(fitted.meta.get("valid") or {}))
