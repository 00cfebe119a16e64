"""Factor-model baselines: a model over Alpha158-style features trading top-k dropout.

Every registered model type (`agents.factor.models.MODELS`) is also an agent in `AGENTS`, so
a run spec can say `{name: lgb, baseline: lightgbm, args: {topk: 50}}`. At its first
decision the agent trains (or loads from the file cache) on windows that end before the
episode's first decision day, then each day scores the tradable members with the features
known before the open and trades Qlib's top-k dropout rule through the broker. With
`retrain_every: m` it trains again every m months, each time on windows that end before
that retraining day. Training itself (windows, cache, validation IC) is `factor.training`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError

from tradebench.agents.baselines import tradable_members
from tradebench.agents.factor.data import (
    TrainingConfig,
    prediction_features,
    prediction_sequences,
)
from tradebench.agents.factor.models import MODELS, ModelSpec
from tradebench.agents.factor.training import FittedModel, retrain_anchor, train_or_load
from tradebench.agents.protocol import AGENTS, Decision, StepInfo
from tradebench.errors import ConfigError
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action, Order
from tradebench.view import MarketView, to_day

__all__ = ["FACTOR_MODELS", "MLAgentConfig", "TopkDropoutAgent", "build_ml_agent", "topk_dropout"]


class MLAgentConfig(TrainingConfig):
    """Arguments of a factor-model baseline (training windows plus trading rule)."""

    topk: int = Field(default=50, ge=1, description="names held")
    n_drop: int = Field(default=5, ge=0, description="worst holdings replaced per day")
    lot_size: int = Field(default=100, ge=1)
    risk_degree: float = Field(default=0.95, gt=0, le=1, description="share of cash spent")
    seed: int = 0
    retrain_every: int | None = Field(
        default=None, ge=1, description="retrain every this many months (None: train once)"
    )
    params: dict[str, Any] = Field(default_factory=dict, description="model overrides")
    cache_dir: str | None = Field(default=None, description="model cache folder")


def topk_dropout(
    scores: pd.Series, held: list[str], topk: int, n_drop: int
) -> tuple[list[str], list[str]]:
    """Qlib's top-k dropout: (names to sell, names to buy), best scores first.

    Holdings are ranked by today's score (unscored holdings last); candidates not held
    fill up to `n_drop + topk - len(held)`; the holdings among the `n_drop` worst of the
    combined list are sold and replaced by the best candidates, keeping `topk` names.
    """
    ranked = scores.sort_values(ascending=False, kind="stable")
    last = scores.reindex(held).sort_values(ascending=False, kind="stable", na_position="last")
    fresh = [s for s in ranked.index if s not in set(held)][: max(n_drop + topk - len(held), 0)]
    comb = scores.reindex([*last.index, *fresh]).sort_values(
        ascending=False, kind="stable", na_position="last"
    )
    worst = set(comb.index[len(comb) - n_drop :]) if n_drop else set()
    sell = [s for s in last.index if s in worst]
    buy = fresh[: max(len(sell) + topk - len(held), 0)]
    return sell, buy


@dataclass
class TopkDropoutAgent:
    """A trained model's scores traded by top-k dropout, equal cash per new name."""

    spec: ModelSpec
    config: MLAgentConfig
    name: str
    _fitted: dict[Any, FittedModel] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def fitted(self, view: MarketView, anchor: Any) -> FittedModel:
        """The model trained (or loaded) for `anchor`, once per agent and anchor."""
        key = to_day(anchor)
        if key not in self._fitted:
            folder = Path(self.config.cache_dir) if self.config.cache_dir else None
            self._fitted[key] = train_or_load(
                view, key, self.spec, self.config, self.config.seed, folder
            )
        return self._fitted[key]

    def model_for(self, view: MarketView, first_day: Any) -> FittedModel:
        """The model in use on the view's day: trained for its retraining anchor."""
        anchor = retrain_anchor(view.calendar, view.as_of, first_day, self.config.retrain_every)
        return self.fitted(view, anchor)

    def scores(self, view: MarketView, fitted: FittedModel) -> pd.Series:
        """Scores of today's tradable members (symbol -> score)."""
        cols = tradable_members(view)
        if not cols.size:
            values = np.zeros(0)
        elif self.spec.inputs == "sequence":
            seqs = prediction_sequences(
                view, self.spec.features, self.spec.step_len, self.config.feature_set
            )
            values = fitted.scores(seqs[cols], cols)
        else:
            feats = prediction_features(view, self.spec.normalise, self.config.feature_set)
            values = fitted.scores(feats[cols])
        return pd.Series(values, index=view.symbols[cols].astype(str), dtype=np.float64)

    async def decide(
        self, view: MarketView, account: AccountSnapshot, step: StepInfo | None = None
    ) -> Decision:
        """Sell the dropped holdings whole and buy replacements with equal cash each."""
        first_day = step.first_day if step is not None else view.as_of
        scores = self.scores(view, self.model_for(view, first_day))
        held = [p.symbol for p in account.positions]
        sell, buy = topk_dropout(scores, held, self.config.topk, self.config.n_drop)
        positions = {p.symbol: p for p in account.positions}
        sell = [s for s in sell if positions[s].available > 0]
        buy = buy[: max(len(sell) + self.config.topk - len(held), 0)]
        orders = [Order(stock_id=s, side="SELL", shares=positions[s].available) for s in sell]
        cash = account.cash + sum(positions[s].available * positions[s].close for s in sell)
        orders += self._buys(view, buy, cash)
        why = f"{self.spec.name} top-{self.config.topk} dropout {self.config.n_drop}"
        return Decision(action=Action(orders=orders, overall_reason=why))

    def _buys(self, view: MarketView, names: list[str], cash: float) -> list[Order]:
        if not names:
            return []
        value = cash * self.config.risk_degree / len(names)
        close, lot = view.last("close"), self.config.lot_size
        orders = []
        for s in names:
            price = close[view.column(s)]
            shares = int(np.floor(value / (price * lot))) * lot if price > 0 else 0
            if shares > 0:
                orders.append(Order(stock_id=s, side="BUY", shares=shares))
        return orders


def build_ml_agent(model: str, **args: Any) -> TopkDropoutAgent:
    """A factor-model agent of registered model type `model` with run-spec `args`.

    Raises:
        ConfigError: unknown model type or invalid arguments.
    """
    try:
        config = MLAgentConfig(**args)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise ConfigError(
            f"bad arguments for factor model {model!r}: {where}: {first['msg']}"
        ) from None
    spec, _ = MODELS.build(model, **config.params)
    return TopkDropoutAgent(spec=spec, config=config, name=model)


FACTOR_MODELS: tuple[str, ...] = tuple(MODELS.names())
"""Registered model types; each is also an agent name in `AGENTS`."""

for _name in FACTOR_MODELS:
    AGENTS.register(_name)(partial(build_ml_agent, _name))
