"""Options and tasks of the single-stock persona benchmark (cells x personas).

A cell is one symbol over one window; a task is a cell traded under one persona. The
options block is what `benchmark: single_stock` run specs carry (`RunSpec.single_stock`).
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Persona = Literal["risk_seeking", "risk_averse", "adaptive"]
PERSONAS: tuple[Persona, ...] = ("risk_seeking", "risk_averse", "adaptive")
Stance = Literal["risk_seeking", "risk_averse"]
PriceMode = Literal["actual", "rebased"]

DEFAULT_SYMBOLS: tuple[str, ...] = ("TSLA", "SPY", "NVDA")
"""Default cells' symbols (SPY is a tradable bars symbol here, not only an index)."""
DEFAULT_WINDOW: tuple[date, date] = (date(2021, 1, 4), date(2023, 6, 30))
"""Default window of the protocol (both ends inclusive)."""
DEFAULT_EPISODE_LENGTH = 50
"""Decisions per episode unless the spec says otherwise."""


class SingleStockOptions(BaseModel):
    """The `single_stock:` block of a run spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    symbols: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SYMBOLS), min_length=1, description="cell symbols"
    )
    personas: list[Persona] = Field(
        default_factory=lambda: list(PERSONAS), min_length=1, description="personas to run"
    )
    episode_length: int | None = Field(
        default=DEFAULT_EPISODE_LENGTH,
        ge=1,
        description="decisions per episode; null = every decision day of the window",
    )
    nudges: int = Field(
        default=1, ge=0, le=5, description="format nudges after an unusable reply, per step"
    )
    price_mode: PriceMode = Field(
        default="actual",
        description="`actual` adjusted prices, or `rebased` (100 = close before the episode)",
    )
    prompt_version: str = Field(default="v1", description="persona prompt files to use")

    @field_validator("symbols", "personas")
    @classmethod
    def _unique(cls, values: list[str]) -> list[str]:
        if len(set(values)) != len(values):
            raise ValueError(f"entries must be unique, got {values}")
        return values


class Task(BaseModel):
    """One task: a symbol over a window, traded under a persona."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    symbol: str = Field(description="real symbol of the dataset")
    start: date = Field(description="first day of the window (inclusive)")
    end: date = Field(description="last day of the window (inclusive)")
    persona: Persona = Field(description="persona the agent is asked to follow")

    @property
    def cell(self) -> str:
        """`SYMBOL_YYYYMMDD-YYYYMMDD`, the cell part of episode ids."""
        return f"{self.symbol}_{self.start:%Y%m%d}-{self.end:%Y%m%d}"


def expand_tasks(
    symbols: list[str], windows: list[tuple[date, date]], personas: list[Persona]
) -> list[Task]:
    """Every task in a stable order: windows x symbols x personas."""
    return [
        Task(symbol=s, start=start, end=end, persona=p)
        for start, end in windows
        for s in symbols
        for p in personas
    ]
