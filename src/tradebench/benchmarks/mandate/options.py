"""Options and cadences of the mandate benchmark (the spec's `options:` block)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Cadence = Literal["once", "daily"]
CADENCES: tuple[Cadence, ...] = ("once", "daily")
"""Rebalance cadences, in display order: `once` decides on the first day and then holds;
`daily` decides before every open."""
AnalystName = Literal["technical", "news", "filings"]
ANALYSTS: tuple[AnalystName, ...] = ("technical", "news", "filings")
COST_LEVELS_BPS: tuple[float, ...] = (0.0, 5.0, 10.0, 20.0, 30.0, 50.0)
"""Half-spreads (bps) of the cost-sensitivity curve."""
DEFAULT_MANDATE = (
    "Long only. No more than 25% in any single name. At most 40% in any sector. "
    "Keep at least 2% in cash."
)


class MandateOptions(BaseModel):
    """The `options:` block of a `benchmark: mandate` spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mandate: str = Field(
        default=DEFAULT_MANDATE,
        min_length=1,
        description="the risk mandate in plain English, compiled once per run "
        "(`tradebench.risk.compile_mandate`)",
    )
    pool_sizes: list[int] = Field(default_factory=lambda: [5, 10, 20], min_length=1)
    """Pool sizes K: one pool of K names per size and seed."""
    evidence_first: bool = True
    """Put names with visible news or filings at the window start into every pool first."""
    half_spread_bps: float = Field(default=5.0, ge=0.0, le=500.0)
    """Half-spread paid on buys and received less on sells (bps of the open)."""
    commission_bps: float = Field(default=1.0, ge=0.0, le=500.0)
    """Commission per fill (bps of the traded value, both sides)."""
    analysts: list[AnalystName] = Field(default_factory=lambda: list(ANALYSTS), min_length=1)
    """Analysts whose signals go into each capture."""
    news_lookback_days: int = Field(default=7, ge=1, le=365)
    """News visible within this many days before the decision instant counts."""
    news_delay_minutes: float = Field(default=0.0, ge=0.0)
    """Extra delay on top of the dataset's `ts_available` before the news analyst uses a
    news record (0: as visible through the view)."""
    momentum_days: int = Field(default=20, ge=2, le=250)
    """Look-back of the technical analyst's momentum and volatility."""
    cost_levels_bps: list[float] = Field(default_factory=lambda: list(COST_LEVELS_BPS))
    """Half-spreads of the cost-sensitivity curve (commission 0 there)."""
    bootstrap_samples: int = Field(default=2000, ge=100, le=100_000)
    bootstrap_seed: int = 0
    initial_cash: float = Field(default=1_000_000.0, gt=0, allow_inf_nan=False)
    max_submit_retries: int = Field(default=2, ge=0)
    max_steps: int | None = Field(default=None, ge=1, description="cap on steps per episode")
    knowledge_cutoffs: dict[str, date] = Field(default_factory=dict)
    """Model agent name -> its stated knowledge cutoff (the contamination certificate's
    cutoff rule; an undeclared model is UNKNOWN)."""
    cutoff_margin_months: int = Field(default=6, ge=0, le=120)
    """A model whose cutoff plus this many months is on or after the window start is
    UNKNOWN."""

    @field_validator("pool_sizes")
    @classmethod
    def _sizes(cls, value: list[int]) -> list[int]:
        if any(k < 2 or k > 100 for k in value) or len(set(value)) != len(value):
            raise ValueError("pool sizes must be distinct integers from 2 to 100")
        return value

    @field_validator("cost_levels_bps")
    @classmethod
    def _levels(cls, value: list[float]) -> list[float]:
        if not value or any(v < 0 for v in value):
            raise ValueError("give at least one cost level, each >= 0 bps")
        return sorted(set(value) | {0.0})  # the 0-bps point is always on the curve
