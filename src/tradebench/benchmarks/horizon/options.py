"""The horizon benchmark's `options:` block."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from tradebench.benchmarks.horizon.curve import DEFAULT_RUN
from tradebench.benchmarks.horizon.questions import KINDS, Kind
from tradebench.benchmarks.horizon.stats import DEFAULT_ALPHA, DEFAULT_LIFT, DEFAULT_POWER

DEFAULT_PER_MONTH = 72
"""Questions per month: detects +15 points over chance at 80% power (one-sided 5%) for
every mix of kinds the generator makes (68 to 72 needed; `tradebench horizon power`)."""


class HorizonOptions(BaseModel):
    """How many questions, of which kinds, and how the curve is read."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    questions_per_month: int = Field(default=DEFAULT_PER_MONTH, ge=1, le=2000)
    """Questions asked per calendar month (bright; blinded asks the same ones)."""
    kinds: tuple[Kind, ...] = Field(default=KINDS, min_length=1)
    """Question kinds to draw from (a kind the data cannot make is skipped that month)."""
    question_seed: int = 0
    """Seed of the question set (the spec's seeds are the models' sample indices)."""
    serving_dates: dict[str, date] = Field(default_factory=dict)
    """Per agent: the date the model was served from; later months are a control."""
    alpha: float = Field(default=DEFAULT_ALPHA, gt=0, lt=0.5)
    """One-sided level of every test."""
    run: int = Field(default=DEFAULT_RUN, ge=1, le=12)
    """Consecutive at-chance months that end the curve."""
    lift: float = Field(default=DEFAULT_LIFT, gt=0, lt=1)
    """Design lift of the power figures."""
    target_power: float = Field(default=DEFAULT_POWER, gt=0, lt=1)
    """Power every curve month must reach for the probe to count as powered."""
    concurrency: int = Field(default=8, ge=1, le=64)
    """Questions in flight at once within an episode."""
