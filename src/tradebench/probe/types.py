"""Stored records of the probe: the probe set (header plus probes) and attacker guesses.

A probe set is one JSONL file: the first line is a `ProbeSetHeader`, every other line a
`Probe`. Payloads are exactly what a masked agent saw; the gold answer sits beside them
and is never shown to an attacker.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tradebench.benchmarks.portfolio.context import PriceMode
from tradebench.masking import MaskLevel

PROBE_BOARDS: tuple[str, ...] = ("main_sh", "main_sz", "chinext", "star")
"""The four strata boards: Shanghai and Shenzhen main boards, ChiNext, STAR."""
GUESS_BOARDS: tuple[str, ...] = (
    "main_sh",
    "main_sz",
    "chinext",
    "star",
    "beijing",
    "us",
    "unknown",
)
"""Boards an attacker may name."""
GuessBoard = Literal["main_sh", "main_sz", "chinext", "star", "beijing", "us", "unknown"]


class Gold(BaseModel):
    """The true identity behind one probe's payloads (never shown to attackers)."""

    model_config = ConfigDict(frozen=True)

    symbol: str
    """Real ticker of the snapshot's stock."""
    decision_day: date
    """Day T the agent decides on (before its open)."""
    date: date
    """The date to recover: the last visible bar (T-1, labelled `day_-1`)."""
    date_pos: int
    """Position of `date` in the header's calendar."""
    sector: str | None = None
    """Sector of the stock; None when the dataset has none (the real CN file)."""
    board: str
    """Board of the stock."""


class Variant(BaseModel):
    """The masked tool results of one probe under one mask level and price mode."""

    model_config = ConfigDict(frozen=True)

    level: MaskLevel
    """Mask level the payloads were produced under."""
    price_mode: PriceMode
    """`raw` price levels or `rebased` (100 at the close before the first decision day)."""
    target_id: str
    """The snapshot stock's identifier as shown (its alias under stock-blind levels)."""
    calls: list[dict[str, Any]]
    """`{"tool", "arguments", "result"}` per call, exactly as the masked tools returned."""


class Probe(BaseModel):
    """One (stock, date) pair, its stratum, gold answer and masked payload variants."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["probe"] = "probe"
    """Line type in the JSONL file."""
    probe_id: str
    """Stable id (`p0001` ..), also the masker's episode id."""
    window: int
    """Time window (0-based) of the stratum."""
    stratum_board: str
    """Board of the stratum the probe was drawn for."""
    universe_size: int
    """Members of the universe on T (the random-guess denominator)."""
    gold: Gold
    """The true answer."""
    variants: list[Variant]
    """Payloads per (level, price mode)."""


class StratumCount(BaseModel):
    """Probes wanted and drawn for one (window, board) stratum."""

    model_config = ConfigDict(frozen=True)

    window: int
    """Time window (0-based)."""
    board: str
    """Board."""
    quota: int
    """Even share of N for this stratum."""
    available: int
    """Eligible (stock, date) pairs in the stratum."""
    drawn: int
    """Probes drawn (short strata are filled from the others)."""


class ProbeSetHeader(BaseModel):
    """First line of a probe file: how it was built and what scoring needs."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["header"] = "header"
    """Line type in the JSONL file."""
    schema_version: int = 1
    """Version of the probe file format."""
    dataset: str
    """Dataset folder the probes came from."""
    dataset_name: str
    """The dataset manifest's name."""
    market: str
    """Market (`cn` or `us`)."""
    currency: str
    """Currency of raw prices."""
    index_symbol: str | None = None
    """Benchmark index of the dataset."""
    calendar: list[date]
    """The dataset's trading calendar (for trading-day distances)."""
    date_lo: int
    """First calendar position a gold date may take."""
    date_hi: int
    """Last calendar position a gold date may take."""
    sectors: list[str] = Field(default_factory=list)
    """Distinct sectors of the dataset (empty when it has none)."""
    boards: list[str]
    """Boards present in the dataset's universe."""
    n: int
    """Probes requested."""
    seed: int
    """Seed of the draw and of the alias maps."""
    windows: list[tuple[date, date]]
    """Gold-date range of each time window."""
    strata: list[StratumCount]
    """Per-stratum quotas and draws (short strata say so here)."""
    levels: list[MaskLevel]
    """Mask levels exported."""
    price_modes: list[PriceMode]
    """Price modes exported."""
    lookback: int
    """Bars in each snapshot."""
    screen: dict[str, Any]
    """Arguments of the `screen_candidates` call."""


class AttackGuess(BaseModel):
    """An attacker's answer for one payload (the JSON the LLM attacker must submit)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    tickers: list[Annotated[str, Field(max_length=16)]] = Field(min_length=1, max_length=5)
    """Up to five real tickers, most likely first (e.g. SH600519)."""
    date: str = Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", max_length=10)
    """Real date of the last bar (`day_-1`), YYYY-MM-DD."""
    sector: str = Field(max_length=40)
    """Sector of the stock (`unknown` allowed)."""
    board: GuessBoard
    """Board of the stock."""

    @field_validator("date")
    @classmethod
    def _real_date(cls, value: str) -> str:
        date.fromisoformat(value)  # ValueError -> validation error for the attacker
        return value
