"""Options and tasks of the single-stock persona benchmark (cells x personas).

A cell is one symbol over one window; a task is a cell traded under one persona. The
default task set is FinMem's: four named cells over its test period, 2022-10-06 ..
2023-04-10, times three personas = 12 tasks. A spec may instead (or also) name `symbols`,
each traded over every window of the spec. The options block is the spec's `options:`.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tradebench.masking import MaskLevel, rebases_prices

Persona = Literal["risk_seeking", "risk_averse", "adaptive"]
PERSONAS: tuple[Persona, ...] = ("risk_seeking", "risk_averse", "adaptive")
Stance = Literal["risk_seeking", "risk_averse"]
PriceMode = Literal["actual", "rebased"]

FINMEM_TEST: tuple[date, date] = (date(2022, 10, 6), date(2023, 4, 10))
"""FinMem's test period (both ends inclusive), the window of the named cells."""
DEFAULT_WINDOW = FINMEM_TEST
"""The window of a symbol cell when nothing else names one (verifiers' default)."""
DEFAULT_EPISODE_LENGTH = 50
"""Decisions per episode unless the spec says otherwise (null = the whole window)."""


class Cell(BaseModel):
    """A named cell: one symbol over one window."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    symbol: str
    start: date
    end: date


CELLS: dict[str, Cell] = {
    name: Cell(name=name, symbol=symbol, start=FINMEM_TEST[0], end=FINMEM_TEST[1])
    for name, symbol in (
        ("tsla_main", "TSLA"),
        ("nflx_main", "NFLX"),
        ("amzn_main", "AMZN"),
        ("msft_main", "MSFT"),
        ("coin_main", "COIN"),
    )
}
"""The named cells: FinMem's stocks over its test period."""
DEFAULT_CELLS: tuple[str, ...] = ("tsla_main", "nflx_main", "amzn_main", "msft_main")
"""The default task set's cells (x three personas = 12 tasks)."""
DEFAULT_SYMBOLS: tuple[str, ...] = tuple(CELLS[c].symbol for c in DEFAULT_CELLS)
"""The default cells' symbols."""


class SingleStockOptions(BaseModel):
    """The `single_stock:` block of a run spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cells: list[str] | None = Field(
        default=None,
        description="named cells (see CELLS); default: the four FinMem cells, unless "
        "`symbols` is given",
    )
    symbols: list[str] = Field(
        default_factory=list, description="symbols traded over every window of the spec"
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
    price_mode: PriceMode | None = Field(
        default=None,
        description="`actual` adjusted prices, or `rebased` (100 = close before the episode); "
        "null = rebased under the masks that hide stocks, actual otherwise",
    )
    prompt_version: str = Field(default="v1", description="persona prompt files to use")

    @field_validator("symbols", "personas", "cells")
    @classmethod
    def _unique(cls, values: list[str] | None) -> list[str] | None:
        if values is not None and len(set(values)) != len(values):
            raise ValueError(f"entries must be unique, got {values}")
        return values

    @field_validator("cells")
    @classmethod
    def _known(cls, values: list[str] | None) -> list[str] | None:
        unknown = [v for v in values or [] if v not in CELLS]
        if unknown:
            raise ValueError(f"unknown cells {unknown}; known: {sorted(CELLS)}")
        return values

    def named_cells(self) -> list[Cell]:
        """The named cells to run: `cells`, else the default four unless `symbols` is set."""
        names = self.cells if self.cells is not None else ([] if self.symbols else DEFAULT_CELLS)
        return [CELLS[n] for n in names]


class Task(BaseModel):
    """One task: a symbol over a window, traded under a persona."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    symbol: str = Field(description="real symbol of the dataset")
    start: date = Field(description="first day of the window (inclusive)")
    end: date = Field(description="last day of the window (inclusive)")
    persona: Persona = Field(description="persona the agent is asked to follow")
    name: str | None = Field(default=None, description="the named cell, if it is one")

    @property
    def cell(self) -> str:
        """The cell part of episode ids: its name (`tsla_main`), or
        `SYMBOL_YYYYMMDD-YYYYMMDD` for a symbol over a spec window."""
        return self.name or f"{self.symbol}_{self.start:%Y%m%d}-{self.end:%Y%m%d}"


def resolve_price_mode(price_mode: PriceMode | None, mask: MaskLevel) -> PriceMode:
    """The price mode an episode runs under: the explicit setting, else `rebased` when the
    mask level rebases prices (its row in `MASK_TABLE`: a price level names a stock) and
    `actual` otherwise."""
    if price_mode is not None:
        return price_mode
    return "rebased" if rebases_prices(mask) else "actual"


def resolve_tasks(options: SingleStockOptions, windows: list[tuple[date, date]]) -> list[Task]:
    """Every task in a stable order: named cells x personas, then `symbols` x `windows` x
    personas.

    Raises:
        ValueError: Nothing to run (no named cells, and no symbols with a window).
    """
    tasks = [
        Task(symbol=c.symbol, start=c.start, end=c.end, persona=p, name=c.name)
        for c in options.named_cells()
        for p in options.personas
    ]
    tasks += expand_tasks(options.symbols, windows, options.personas)
    if not tasks:
        raise ValueError("no tasks: name `cells`, or give `symbols` and spec windows")
    return tasks


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
