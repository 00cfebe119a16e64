"""Scores of a settled single-stock episode: raw metrics, mapped components, composite.

All functions are pure. Returns are taken from the wealth path ``W = exp(cumsum(e))`` with
``W_{-1} = 1`` (see `ledger.py`), so the metric package's simple-return conventions apply:

* cumulative return ``CR = W_last - 1 = exp(sum(e)) - 1`` (a simple return, not the sum
  of log returns, which is stored separately as `log_return`);
* Sharpe = mean / std(ddof=1) of the per-step simple returns ``exp(e_i) - 1``, times
  sqrt(periods_per_year), risk-free rate 0 (`tradebench.metrics.sharpe`);
* annualised volatility = std(ddof=1) of the same returns times sqrt(periods_per_year);
* max drawdown of W with 1 as the first peak (`tradebench.metrics.max_drawdown`).

Components: ``cum_return = clip(0.5 + CR/2, 0, 1)``, ``sharpe = clip((Sharpe + 1)/3, 0, 1)``
(an undefined Sharpe counts as 0, i.e. 1/3), ``stability = 1 - clip(MDD, 0, 1)``,
``discipline = valid decisions / decision steps``; the composite is their plain mean.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, field_validator

from tradebench.errors import DataError
from tradebench.metrics import TRADING_DAYS_PER_YEAR, max_drawdown, sharpe, simple_returns
from tradebench.metrics._arrays import as_floats
from tradebench.metrics.returns import check_periods_per_year

SCHEMA_VERSION = 1


def annualized_volatility(returns: ArrayLike, periods_per_year: float) -> float:
    """``std(returns, ddof=1) * sqrt(periods_per_year)``; NaN for < 2 returns or any NaN.

    Raises:
        ConfigError: `periods_per_year` is not positive.
    """
    check_periods_per_year(periods_per_year)
    x = as_floats(returns, "returns")
    if len(x) < 2 or not np.isfinite(x).all():
        return float("nan")
    return float(x.std(ddof=1) * np.sqrt(periods_per_year))


class PathMetrics(BaseModel):
    """Raw metrics of one log-return path (the strategy, or buy-and-hold as reference)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    cum_return: float
    """``exp(sum(e)) - 1``: simple cumulative return."""
    log_return: float
    """``sum(e)``: cumulative log return."""
    sharpe: float
    """Annualised Sharpe of the per-step simple returns (rf = 0); NaN when undefined."""
    volatility: float
    """Annualised volatility of the per-step simple returns; NaN for fewer than 2 steps."""
    max_drawdown: float
    """Largest fall of wealth below its running peak (1 is the first peak), in [0, 1]."""

    @field_validator("*", mode="before")
    @classmethod
    def _null_is_nan(cls, value: object) -> object:
        return float("nan") if value is None else value  # JSON stores NaN as null


def path_metrics(earned: ArrayLike, periods_per_year: float) -> PathMetrics:
    """Raw metrics of per-step log returns `earned`.

    Raises:
        DataError: `earned` is empty or holds NaN.
    """
    e = as_floats(earned, "earned")
    if len(e) == 0 or not np.isfinite(e).all():
        raise DataError("a scored episode needs at least one settled step and no NaN returns")
    wealth = np.exp(np.cumsum(e))
    step_returns = simple_returns(wealth, initial=1.0)
    return PathMetrics(
        cum_return=float(wealth[-1] - 1.0),
        log_return=float(e.sum()),
        sharpe=sharpe(step_returns, periods_per_year),
        volatility=annualized_volatility(step_returns, periods_per_year),
        max_drawdown=max_drawdown(wealth, 1.0),
    )


class Components(BaseModel):
    """The four mapped components, each in [0, 1]."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    cum_return: float
    """``clip(0.5 + CR / 2, 0, 1)``."""
    sharpe: float
    """``clip((Sharpe + 1) / 3, 0, 1)``; an undefined Sharpe maps as 0 (-> 1/3)."""
    stability: float
    """``1 - clip(MDD, 0, 1)``."""
    discipline: float
    """Valid decisions over decision steps."""


def _clip01(value: float) -> float:
    return float(min(max(value, 0.0), 1.0))


def map_components(metrics: PathMetrics, discipline: float) -> Components:
    """Map raw metrics and the discipline rate to components in [0, 1]."""
    sharpe_value = 0.0 if math.isnan(metrics.sharpe) else metrics.sharpe
    return Components(
        cum_return=_clip01(0.5 + metrics.cum_return / 2.0),
        sharpe=_clip01((sharpe_value + 1.0) / 3.0),
        stability=1.0 - _clip01(metrics.max_drawdown),
        discipline=_clip01(discipline),
    )


def composite(components: Components) -> float:
    """The plain mean of the four components."""
    c = components
    return (c.cum_return + c.sharpe + c.stability + c.discipline) / 4.0


class SingleStockScores(BaseModel):
    """Everything scored from one settled episode (written to `metrics.json`)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    schema_version: int = SCHEMA_VERSION
    """Version of this record."""
    periods_per_year: float
    """Annualisation factor used (252 for daily decisions)."""
    n_steps: int
    """Decision steps scored."""
    valid_steps: int
    """Steps whose decision was readable and valid."""
    strategy: PathMetrics
    """Raw metrics of the strategy."""
    buy_and_hold: PathMetrics
    """Raw metrics of holding +1 over the same holding periods (reference)."""
    components: Components
    """Mapped components."""
    composite: float
    """Mean of the components."""


def score_episode(
    earned: ArrayLike,
    asset_log_returns: ArrayLike,
    valid: ArrayLike,
    periods_per_year: float = TRADING_DAYS_PER_YEAR,
) -> SingleStockScores:
    """Score a settled episode from its per-step series.

    Args:
        earned: Strategy log return per step (``p_i * ln(P[i+1]/P[i])``).
        asset_log_returns: ``ln(P[i+1]/P[i])`` per step (buy-and-hold earns these).
        valid: Whether each step's decision was readable and valid.
        periods_per_year: Decisions per year (252 for daily).

    Raises:
        DataError: Empty or misaligned series.
    """
    flags = np.asarray(valid, dtype=bool)
    strategy = path_metrics(earned, periods_per_year)
    if len(flags) != len(as_floats(earned, "earned")):
        raise DataError("`valid` must have one entry per step")
    discipline = float(flags.mean())
    components = map_components(strategy, discipline)
    return SingleStockScores(
        periods_per_year=periods_per_year,
        n_steps=len(flags),
        valid_steps=int(flags.sum()),
        strategy=strategy,
        buy_and_hold=path_metrics(asset_log_returns, periods_per_year),
        components=components,
        composite=composite(components),
    )
