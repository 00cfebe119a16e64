"""Options and cadences of the mandate benchmark (the spec's `options:` block)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Cadence = Literal["once", "daily"]
CADENCES: tuple[Cadence, ...] = ("once", "daily")
"""Rebalance cadences, in display order: `once` decides on the first day and then holds;
`daily` decides before every open."""
AnalystName = Literal["technical", "news", "filings", "fundamental", "sentiment", "risk"]
ANALYSTS: tuple[AnalystName, ...] = (
    "technical",
    "news",
    "filings",
    "fundamental",
    "sentiment",
    "risk",
)
"""Every analyst role, rule or model (`analysts.ANALYST_FUNCTIONS`)."""
DEFAULT_ANALYSTS: tuple[AnalystName, ...] = ("technical", "news", "filings")
"""The analysts of `analysts` when the spec names none."""
PoolRule = Literal["analysts", "random"]
"""How a pool is chosen: the analysts' aggregated top-K, or a seeded random draw (the
named control)."""
Weighting = Literal["uniform", "ic"]
"""How analysts are weighted in the aggregation that chooses the pool."""
SectorPolicy = Literal["own", "shared", "error"]
"""A name without a sector: its own sector (`own`), one `unknown` sector for all such
names (`shared`), or a configuration error (`error`)."""
DEFAULT_SET = "default"
COST_LEVELS_BPS: tuple[float, ...] = (0.0, 5.0, 10.0, 20.0, 30.0, 50.0)
"""Half-spreads (bps) of the cost-sensitivity curve."""
DEFAULT_MANDATE = (
    "Long only. No more than 25% in any single name. At most 40% in any sector. "
    "Keep at least 2% in cash."
)


class ModelAnalyst(BaseModel):
    """A model analyst of an analyst set: a role (what evidence it reads) played by a
    model agent of the spec (`agents[].name` with `provider` + `model`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: AnalystName
    """`technical` reads the bars' momentum and volatility, `news` the visible headlines,
    `filings` the latest visible filing, `fundamental` the year's price range and the
    latest periodic report, `sentiment` a month of headlines and their counts, `risk`
    drawdown, downside volatility and beta to the index."""
    agent: str
    """The spec agent whose model plays the role (it is then an analyst, not a
    constructor)."""


AnalystEntry = AnalystName | ModelAnalyst


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
    pool: PoolRule = "analysts"
    """`analysts`: the pool is the K names with the highest aggregated analyst score at the
    window's first decision day (the analysts choose it); `random`: the seeded draw (a
    control)."""
    pool_weights: Weighting = "uniform"
    """Analyst weights of the aggregation: `uniform`, or `ic` (each analyst's mean daily
    rank information coefficient over `ic_validation_days`, floored at 0)."""
    ic_validation_days: int = Field(default=20, ge=2, le=250)
    """The IC validation window: this many trading days just before the window's first
    decision day (the outcome of day d is its close-to-close return, known before T)."""
    evidence_first: bool = True
    """Random pools: names with visible news or filings at the window start go first."""
    unknown_sector: SectorPolicy = "own"
    """What a name without a sector in the dataset is, when the mandate caps sectors."""
    drift_control: bool = False
    """Rebalance (project the held book onto the mandate, no constructor call) before an
    open whenever the book held at the last close breaks a bound by more than
    `drift_tolerance`; otherwise `once` holds whatever drifts."""
    drift_tolerance: float = Field(default=0.005, ge=0.0, le=1.0)
    """Slack (weight units) beyond a bound before the held book counts as breached."""
    analyst_sets: dict[str, list[AnalystEntry]] = Field(default_factory=dict)
    """Named analyst sets (the analyst swap): each set's captures are replayed under every
    constructor. Empty: one set, `analysts`."""
    mandate_compiler: Literal["grammar", "llm"] = "grammar"
    """Who compiles the mandate: the phrase grammar, or a model (`mandate_compiler_agent`)
    through a forced tool call, once per run."""
    mandate_compiler_agent: str | None = None
    """The spec's model agent that compiles the mandate when `mandate_compiler: llm`."""
    half_spread_bps: float = Field(default=5.0, ge=0.0, le=500.0)
    """Half-spread paid on buys and received less on sells (bps of the open)."""
    commission_bps: float = Field(default=1.0, ge=0.0, le=500.0)
    """Commission per fill (bps of the traded value, both sides)."""
    analysts: list[AnalystName] = Field(
        default_factory=lambda: list(DEFAULT_ANALYSTS), min_length=1
    )
    """Rule analysts whose signals go into each capture (any of `ANALYSTS`)."""
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
    cutoff_margin_months: int = Field(default=6, ge=0, le=120)
    """A model whose cutoff plus this many months is on or after the window start is
    UNKNOWN."""

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        if isinstance(data, dict) and "knowledge_cutoffs" in data:
            raise ValueError(
                "knowledge_cutoffs moved to the agents: give `knowledge_cutoff` on each "
                "model agent (one declaration for the certificate and the leaderboard)"
            )
        return data

    @field_validator("analyst_sets")
    @classmethod
    def _sets(cls, value: dict[str, list[AnalystEntry]]) -> dict[str, list[AnalystEntry]]:
        for name, entries in value.items():
            if not re.fullmatch(r"[A-Za-z0-9]{1,20}", name):
                raise ValueError(f"analyst set {name!r}: a name of 1-20 letters or digits")
            if not entries:
                raise ValueError(f"analyst set {name!r} has no analyst")
        return value

    def sets(self) -> dict[str, list[AnalystEntry]]:
        """The analyst sets, `{DEFAULT_SET: analysts}` when none is named."""
        return dict(self.analyst_sets) or {DEFAULT_SET: list(self.analysts)}

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
