"""`RiskConstraints`: the typed, versioned form of a risk mandate, its English rendering and
its content hash.

Conventions (docs/risk.md): weights are fractions of NAV, one per name; cash is
`1 - sum(weights)`. A name is *held* when `|w| > tol`. Exposure of a sector and gross
exposure sum `|w|`; turnover is `sum |w_new - w_old|` over names, cash not counted, so
moving 10% from one name to another is 20% turnover and buying 10% from cash is 10%.
Every field left at its default constrains nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

CONSTRAINTS_VERSION = 1
"""Version of `RiskConstraints` written today."""

SLACK = 1e-12
"""Rounding slack of the contradiction checks (`3 * 0.1` is not `1 - 0.7` in floats)."""
MAX_NAME_LENGTH = 16
MAX_SECTOR_LENGTH = 40
MAX_EXCLUDED = 64
MAX_SECTORS = 32

NAME_SCHEMA_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9._:\-]{{0,{MAX_NAME_LENGTH - 1}}}$"
"""The shape of a name in the JSON Schema (ASCII, bounded: a grammar can enforce it)."""
NAME_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._:\-]*[A-Za-z0-9])?")
"""An excluded name: a ticker or stock id (`TSLA`, `BRK.B`, `SH600000`, `600519.SS`)."""
SECTOR_SCHEMA_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9 &/'(),\-]{{0,{MAX_SECTOR_LENGTH - 1}}}$"
"""The shape of a sector name in the JSON Schema."""
SECTOR_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9&/'(),\-]*(?: [A-Za-z0-9&/'(),\-]+)*")
"""A sector name: words of letters, digits and `& / ' ( ) , -` separated by single spaces
(no `.` or `;`, which end a mandate sentence)."""
RESERVED_NAMES = frozenset({"and", "or"})
"""Words that separate names in an `Exclude ...` list; no name may be called so."""
RESERVED_SECTORS = frozenset({"any", "each", "every", "a", "one", "single", "the"})
"""Words the mandate grammar reads as "all sectors"; no sector may be called so."""

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_LENGTH, pattern=NAME_SCHEMA_PATTERN)]


class SectorCap(BaseModel):
    """A cap on one sector's exposure (sum of |weight| of its names)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    sector: str = Field(min_length=1, max_length=MAX_SECTOR_LENGTH, pattern=SECTOR_SCHEMA_PATTERN)
    """Sector name, exactly as in the `sectors` map given to the critic."""
    cap: float = Field(ge=0.0, le=1.0)
    """Most exposure of the sector (fraction of NAV)."""

    @field_validator("sector")
    @classmethod
    def _usable(cls, value: str) -> str:
        if not SECTOR_PATTERN.fullmatch(value) or value.lower() in RESERVED_SECTORS:
            raise ValueError(
                f"sector name {value!r} is not usable: words of letters, digits and "
                "`& / ' ( ) , -` with single spaces, not one of "
                + ", ".join(sorted(RESERVED_SECTORS))
            )
        return value


class RiskConstraints(BaseModel):
    """Typed constraints compiled from a mandate; every default constrains nothing.

    Construction validates each bound and rejects contradictory combinations (a
    `pydantic.ValidationError` naming them); `compile_mandate` turns that into a
    `MandateError`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = Field(default=CONSTRAINTS_VERSION, ge=1, le=CONSTRAINTS_VERSION)
    """Version of this record."""
    long_only: bool = False
    """True: no short positions (every weight >= 0)."""
    max_weight: float | None = Field(default=None, gt=0.0, le=1.0)
    """Largest |weight| of any single name (fraction of NAV, 0.10 = 10%)."""
    min_position: float | None = Field(default=None, gt=0.0, le=1.0)
    """Smallest |weight| of any name held (a name is held or at zero)."""
    min_names: int | None = Field(default=None, ge=1, le=1000)
    """Fewest names held."""
    max_names: int | None = Field(default=None, ge=1, le=1000)
    """Most names held."""
    max_sector_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    """Cap on every sector's exposure (sum of |weight| of its names)."""
    sector_caps: tuple[SectorCap, ...] = Field(default=(), max_length=MAX_SECTORS)
    """Caps on named sectors (stored sorted by sector; a mapping sector -> cap is accepted
    too); a named sector's cap replaces `max_sector_weight` for that sector."""
    max_turnover: float | None = Field(default=None, ge=0.0, le=4.0)
    """Largest sum of |w_new - w_old| over names per rebalance (cash not counted)."""
    cash_floor: float | None = Field(default=None, ge=0.0, le=1.0)
    """Least cash weight (cash = 1 - sum of weights)."""
    cash_ceiling: float | None = Field(default=None, ge=0.0, le=1.0)
    """Most cash weight."""
    max_gross: float | None = Field(default=None, gt=0.0, le=5.0)
    """Largest gross exposure, sum of |weight| over names (1.0 = 100%, no leverage)."""
    excluded: tuple[Name, ...] = Field(default=(), max_length=MAX_EXCLUDED)
    """Names that must not be held (stored sorted, without duplicates)."""

    @field_validator("excluded")
    @classmethod
    def _sorted_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [n for n in value if not NAME_PATTERN.fullmatch(n) or n in RESERVED_NAMES]
        if bad:
            raise ValueError(
                f"excluded names {bad} are not tickers or stock ids (letters, digits and "
                "`. _ : -` inside; not `and` or `or`)"
            )
        return tuple(sorted(set(value)))

    @field_validator("sector_caps", mode="before")
    @classmethod
    def _caps_from_mapping(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return [{"sector": k, "cap": v} for k, v in value.items()]
        return value

    @field_validator("sector_caps")
    @classmethod
    def _sorted_sectors(cls, value: tuple[SectorCap, ...]) -> tuple[SectorCap, ...]:
        caps: dict[str, SectorCap] = {}
        for item in value:
            if item.sector in caps and caps[item.sector].cap != item.cap:
                raise ValueError(f"the {item.sector} sector is capped twice; keep one cap")
            caps[item.sector] = item
        return tuple(caps[k] for k in sorted(caps))

    @model_validator(mode="after")
    def _consistent(self) -> RiskConstraints:
        problems = contradictions(self)
        if problems:
            raise ValueError("contradictory constraints: " + "; ".join(problems))
        return self

    @property
    def sector_cap_map(self) -> dict[str, float]:
        """`sector_caps` as a mapping sector -> cap."""
        return {item.sector: item.cap for item in self.sector_caps}


def contradictions(c: RiskConstraints) -> list[str]:
    """Why no portfolio can satisfy `c` whatever the names (empty when none found).

    Checks pairs of bounds and the bounds on the invested weight `sum(w) = 1 - cash`:
    what the names can reach (`max_names * max_weight`, `max_gross`) must cover the least
    that must be invested (`1 - cash_ceiling`), and the least that must be held
    (`min_names * min_position`) must fit under the most that may be.
    """
    out: list[str] = []
    if c.min_names is not None and c.max_names is not None and c.min_names > c.max_names:
        out.append(f"min_names {c.min_names} > max_names {c.max_names}")
    if c.cash_floor is not None and c.cash_ceiling is not None and c.cash_floor > c.cash_ceiling:
        out.append(f"cash_floor {pct(c.cash_floor)} > cash_ceiling {pct(c.cash_ceiling)}")
    if c.min_position is not None and c.max_weight is not None and c.min_position > c.max_weight:
        out.append(f"min_position {pct(c.min_position)} > max_weight {pct(c.max_weight)}")
    if c.cash_ceiling is not None:
        need = 1.0 - c.cash_ceiling
        if c.max_names is not None and c.max_weight is not None:
            reach = c.max_names * c.max_weight
            if reach < need - SLACK:
                out.append(
                    f"max_names {c.max_names} x max_weight {pct(c.max_weight)} = {pct(reach)} "
                    f"cannot invest the {pct(need)} a cash ceiling of {pct(c.cash_ceiling)} needs"
                )
        if c.max_gross is not None and c.max_gross < need - SLACK:
            out.append(
                f"max_gross {pct(c.max_gross)} cannot invest the {pct(need)} a cash ceiling "
                f"of {pct(c.cash_ceiling)} needs"
            )
    if c.min_names is not None and c.min_position is not None:
        least = c.min_names * c.min_position
        room = [("max_gross", c.max_gross)]
        if c.long_only:
            room.append(("1 - cash_floor", None if c.cash_floor is None else 1.0 - c.cash_floor))
        for label, most in room:
            if most is not None and least > most + SLACK:
                out.append(
                    f"min_names {c.min_names} x min_position {pct(c.min_position)} = "
                    f"{pct(least)} exceeds {label} = {pct(most)}"
                )
    return out


def pct(x: float) -> str:
    """`x` as an exact percentage: `0.1 -> "10%"`, `0.025 -> "2.5%"`.

    Exact both ways: `float(Decimal(p) / 100)` gives back `x` for the digits written here,
    which is what makes render -> compile a round trip.
    """
    text = format((Decimal(repr(float(x))) * 100).normalize(), "f")
    return f"{text}%"


def _names(n: int) -> str:
    return f"{n} name" if n == 1 else f"{n} names"


def render_lines(c: RiskConstraints) -> list[str]:
    """One plain-English sentence per constraint (the mandate grammar reads them back)."""
    lines: list[str] = []
    if c.long_only:
        lines.append("Long only.")
    if c.max_weight is not None:
        lines.append(f"No more than {pct(c.max_weight)} in any single name.")
    if c.min_position is not None:
        lines.append(f"At least {pct(c.min_position)} in each name held.")
    if c.max_sector_weight is not None:
        lines.append(f"At most {pct(c.max_sector_weight)} in any sector.")
    for item in c.sector_caps:
        lines.append(f"At most {pct(item.cap)} in the {item.sector} sector.")
    if c.min_names is not None and c.min_names == c.max_names:
        lines.append(f"Hold exactly {_names(c.min_names)}.")
    elif c.min_names is not None and c.max_names is not None:
        lines.append(f"Hold between {c.min_names} and {_names(c.max_names)}.")
    elif c.min_names is not None:
        lines.append(f"Hold at least {_names(c.min_names)}.")
    elif c.max_names is not None:
        lines.append(f"Hold at most {_names(c.max_names)}.")
    if c.cash_floor is not None and c.cash_ceiling is not None:
        lines.append(f"Keep between {pct(c.cash_floor)} and {pct(c.cash_ceiling)} in cash.")
    elif c.cash_floor is not None:
        lines.append(f"Keep at least {pct(c.cash_floor)} in cash.")
    elif c.cash_ceiling is not None:
        lines.append(f"Keep at most {pct(c.cash_ceiling)} in cash.")
    if c.max_turnover is not None:
        lines.append(f"Turnover at most {pct(c.max_turnover)} per rebalance.")
    if c.max_gross is not None:
        lines.append(f"Gross exposure at most {pct(c.max_gross)}.")
    if c.excluded:
        lines.append(f"Exclude {', '.join(c.excluded)}.")
    return lines or ["No constraints."]


def render_constraints(c: RiskConstraints) -> str:
    """The constraints in plain English, one sentence per line, for reports and prompts.

    `compile_mandate(render_constraints(c)) == c` for every valid `c`.
    """
    return "\n".join(render_lines(c))


def canonical_json(c: RiskConstraints) -> str:
    """Sorted, compact JSON of the constraints: the text `constraints_hash` hashes."""
    return json.dumps(c.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def constraints_hash(c: RiskConstraints) -> str:
    """A stable sha256 (hex) of the constraints' content, the same in every process."""
    return hashlib.sha256(canonical_json(c).encode()).hexdigest()
