"""Typed, frozen configuration of one MCQ backtest: data window, broker, sizing, strategy.

A question record stores its `BacktestConfig` in full, so the checker can re-run the backtest
from the record alone. Every field here is stated in the question's preamble.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tradebench.benchmarks.mcq.params import validate_params
from tradebench.errors import ConfigError

StrategyName = Literal[
    "sma_cross", "rolling_mean", "ewma", "rsi", "macd_cross", "mean_reversion", "ewma_cross"
]
STRATEGY_NAMES: tuple[StrategyName, ...] = (
    "sma_cross",
    "rolling_mean",
    "ewma",
    "rsi",
    "macd_cross",
)
"""The strategies a build uses by default."""
LEGACY_STRATEGIES: tuple[StrategyName, ...] = ("mean_reversion", "ewma_cross")
"""Rules of schema-1 files (band mean reversion, EMA crossover events): still built on
request with --strategy and still checked, never part of the default set."""
ALL_STRATEGIES: tuple[StrategyName, ...] = (*STRATEGY_NAMES, *LEGACY_STRATEGIES)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataRef(_Frozen):
    """Where the bars come from, and a digest proving the checker re-reads the same bars."""

    kind: Literal["dataset", "long_parquet"] = Field(
        description="'dataset': a tradebench dataset folder; 'long_parquet': a long-format "
        "Parquet file with columns date, symbol, open, high, low, close, volume."
    )
    path: str = Field(description="Absolute path of the dataset folder or Parquet file.")
    symbol: str = Field(description="Instrument symbol as spelled in the source.")
    start: dt.date = Field(description="First calendar day of the window (inclusive).")
    end: dt.date = Field(description="Last calendar day of the window (inclusive).")
    adjusted: bool = Field(default=True, description="Adjusted prices (raw x adj_factor).")
    bars_sha256: str = Field(default="", description="SHA-256 of the canonical bar table.")

    @model_validator(mode="after")
    def _window(self) -> DataRef:
        if self.end <= self.start:
            raise ConfigError(f"window end {self.end} must be after start {self.start}")
        return self


class Sizing(_Frozen):
    """How many shares a buy order asks for; sells always close the whole position."""

    kind: Literal["percent", "stake"] = Field(
        default="percent",
        description="'percent': floor(percent% of cash / signal-day close); 'stake': fixed shares.",
    )
    percent: float = Field(default=95.0, gt=0, le=100, description="Percent of cash per buy.")
    stake: int = Field(default=100, gt=0, description="Shares per buy when kind='stake'.")

    def describe(self) -> str:
        """One sentence for the question preamble (what the sizer does, in plain words)."""
        if self.kind == "stake":
            return f"every buy order is for a fixed {self.stake} shares"
        return (
            f"every buy order is for floor({self.percent:g}% of the broker cash / the signal "
            "day's close) shares"
        )


class StrategySpec(_Frozen):
    """A strategy name and exactly its parameters (validated by `params.validate_params`)."""

    name: StrategyName
    params: dict[str, float | int] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _valid(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            return {**data, "params": validate_params(data["name"], data.get("params") or {})}
        return data


class BacktestConfig(_Frozen):
    """Everything needed to re-run one backtest: data, broker, sizing and strategy."""

    schema_version: int = 1
    data: DataRef
    initial_cash: float = Field(
        default=50_000.0, gt=0, allow_inf_nan=False, description="Starting broker cash."
    )
    commission_rate: float = Field(
        default=0.001, ge=0, lt=0.1, description="Commission as a fraction of traded value."
    )
    sizing: Sizing = Field(default_factory=Sizing)
    strategy: StrategySpec

    def key(self) -> str:
        """Stable digest of the config: equal configs share one backtest run."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
