"""Analyst sources: what turns the view into signals for a list of names.

A source is a rule analyst (`analysts.ANALYST_FUNCTIONS`, deterministic) or a model
analyst (`model_analysts.ModelAnalystSource`, a forced tool call through the shared tool
loop). Both read the market only through the point-in-time `MarketView` and return
`Signal`s labelled with the source's `label` (`technical`, or `news:<agent>` for a model
playing the news role), plus a record of any model calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.mandate.analysts import ANALYST_FUNCTIONS, AnalystSettings, Signal
from tradebench.view import MarketView


class AnalystCall(BaseModel):
    """One model analyst's call behind a capture or a pool choice."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    analyst: str
    """The source's label (`<role>:<agent>`)."""
    tokens_in: int
    """Input tokens of the call's model requests."""
    tokens_out: int
    """Output tokens."""
    retries: int
    """Submission attempts after the first (refused calls fed back)."""
    fallback: bool
    """No valid call: every name got no view (score 0, confidence 0)."""


@dataclass(frozen=True)
class SourceOutput:
    """Signals for the names asked (one per name) and the model calls behind them."""

    signals: list[Signal]
    calls: list[AnalystCall] = field(default_factory=list)


class AnalystSource(Protocol):
    """Turns the view at T into one signal per name."""

    @property
    def label(self) -> str:
        """The analyst label carried by its signals."""
        ...

    async def signals(self, view: MarketView, names: Sequence[str]) -> SourceOutput:
        """One signal per name of `names`, from `view` only."""
        ...


@dataclass(frozen=True)
class RuleAnalyst:
    """A deterministic analyst role (a key of `ANALYST_FUNCTIONS`)."""

    role: str
    settings: AnalystSettings

    @property
    def label(self) -> str:
        """The role's name."""
        return self.role

    async def signals(self, view: MarketView, names: Sequence[str]) -> SourceOutput:
        """The role's function on `names`."""
        return SourceOutput(ANALYST_FUNCTIONS[self.role](view, names, self.settings))
