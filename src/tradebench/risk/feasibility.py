"""What a portfolio's constraint quantities are, and whether they hold: numpy only, no
solver. `project` uses it for its shortcut (a feasible proposal is returned unchanged)
and to check every result; tests use it as the independent judge.

Inputs are `name -> weight` (a mapping or a pandas Series); cash is `1 - sum(weights)`.
Names in `previous` but not in `weights` weigh zero. `previous=None` means no turnover
constraint applies (the first rebalance); pass `{}` to measure turnover from all cash.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.errors import DataError
from tradebench.risk.constraints import RiskConstraints

Weights = Mapping[str, float] | pd.Series
Sectors = Mapping[str, str] | pd.Series
ConstraintKind = Literal[
    "long_only",
    "excluded",
    "max_weight",
    "min_position",
    "min_names",
    "max_names",
    "sector_cap",
    "cash_floor",
    "cash_ceiling",
    "max_gross",
    "max_turnover",
]
Sense = Literal["le", "ge"]
FEASIBILITY_TOL = 1e-9
"""Default tolerance: a bound holds when it is broken by no more than this."""


class Violation(BaseModel):
    """One constraint a portfolio breaks by more than the tolerance."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    constraint: ConstraintKind
    """Which constraint (a field of `RiskConstraints`, or `sector_cap` for either cap)."""
    subject: str | None
    """The name or sector it applies to; None for a portfolio-wide constraint."""
    bound: float
    """The bound (a weight, or a count of names)."""
    value: float
    """The portfolio's value of the constrained quantity."""


@dataclass(frozen=True)
class Book:
    """Proposed (or checked) weights, previous weights and sectors aligned on one name list.

    Names: those of `proposed` in order, then those of `previous` not in it.
    """

    names: tuple[str, ...]
    n_proposed: int
    """The first `n_proposed` names are the proposal's."""
    proposed: np.ndarray
    previous: np.ndarray | None
    sector_code: np.ndarray
    """Index into `sector_names` per name; -1 where no sector is known."""
    sector_names: tuple[str, ...]
    excluded: np.ndarray
    """True for excluded names."""


@dataclass(frozen=True)
class Family:
    """One kind of constraint evaluated over its subjects: `value <sense> bound`."""

    kind: ConstraintKind
    sense: Sense
    value: np.ndarray
    bound: np.ndarray
    subjects: tuple[str | None, ...]
    index: np.ndarray | None = None
    """Book index of each subject: a name's position for per-name families, a sector
    code for `sector_cap`; None for portfolio-wide constraints."""

    def excess(self) -> np.ndarray:
        """How far each subject is beyond its bound (<= 0 when it holds)."""
        gap = self.value - self.bound
        return gap if self.sense == "le" else -gap


def _series(weights: Weights | None, what: str) -> pd.Series | None:
    if weights is None:
        return None
    series = weights if isinstance(weights, pd.Series) else pd.Series(dict(weights), dtype=float)
    if not series.index.is_unique:
        dupes = sorted({str(n) for n in series.index[series.index.duplicated()]})
        raise DataError(f"{what} weights name {dupes} more than once; give each name once")
    values = series.to_numpy(dtype=float)
    if not np.isfinite(values).all():
        bad = [str(n) for n, v in zip(series.index, values, strict=True) if not math.isfinite(v)]
        raise DataError(f"{what} weights of {bad} are not finite numbers")
    return series


def build_book(
    proposed: Weights,
    constraints: RiskConstraints,
    previous: Weights | None = None,
    sectors: Sectors | None = None,
) -> Book:
    """Align `proposed`, `previous` and `sectors` on one name list.

    Raises:
        DataError: Duplicate or non-finite weights, or sector caps without a sector for
            every name.
    """
    prop = _series(proposed, "proposed")
    prev = _series(previous, "previous")
    assert prop is not None
    names = [str(n) for n in prop.index]
    if prev is not None:
        seen = set(names)
        names += [str(n) for n in prev.index if str(n) not in seen]
    index = pd.Index(names)
    p = prop.set_axis([str(n) for n in prop.index]).reindex(index, fill_value=0.0)
    o = None
    if prev is not None:
        o = prev.set_axis([str(n) for n in prev.index]).reindex(index, fill_value=0.0)
    codes, sector_names = _sector_codes(index, constraints, sectors)
    excluded = index.isin(list(constraints.excluded))
    return Book(
        names=tuple(names),
        n_proposed=len(prop),
        proposed=p.to_numpy(dtype=float),
        previous=None if o is None else o.to_numpy(dtype=float),
        sector_code=codes,
        sector_names=sector_names,
        excluded=np.asarray(excluded, dtype=bool),
    )


def _sector_codes(
    index: pd.Index, c: RiskConstraints, sectors: Sectors | None
) -> tuple[np.ndarray, tuple[str, ...]]:
    capped = c.max_sector_weight is not None or bool(c.sector_caps)
    if sectors is None:
        if capped:
            raise DataError("the constraints cap sectors; pass `sectors` (name -> sector)")
        return np.full(len(index), -1, dtype=np.int64), ()
    mapping = pd.Series(sectors if isinstance(sectors, pd.Series) else dict(sectors))
    mapping = mapping.set_axis([str(n) for n in mapping.index])
    aligned = mapping[~mapping.index.duplicated()].reindex(index)
    if capped and aligned.isna().any():
        missing = [str(n) for n in index[aligned.isna().to_numpy()]][:10]
        raise DataError(f"sector caps need a sector for every name; none given for {missing}")
    codes, uniques = pd.factorize(aligned.astype(object), use_na_sentinel=True)
    return codes.astype(np.int64), tuple(str(s) for s in uniques)


def sector_caps(book: Book, c: RiskConstraints) -> np.ndarray:
    """The cap of each sector of the book (`inf` where none applies)."""
    general = math.inf if c.max_sector_weight is None else c.max_sector_weight
    return np.array([c.sector_cap_map.get(s, general) for s in book.sector_names], dtype=float)


def held_count(w: np.ndarray, tol: float) -> int:
    """Names held: `|w| > tol`."""
    return int(np.count_nonzero(np.abs(w) > tol))


def sector_exposure(w: np.ndarray, book: Book) -> np.ndarray:
    """Sum of |w| per sector of the book."""
    known = book.sector_code >= 0
    return np.bincount(
        book.sector_code[known], weights=np.abs(w)[known], minlength=len(book.sector_names)
    )


def families(w: np.ndarray, book: Book, c: RiskConstraints, tol: float) -> list[Family]:
    """Every constraint of `c` evaluated at weights `w` (aligned with `book.names`)."""
    names = np.array(book.names, dtype=object)
    absw = np.abs(w)
    out: list[Family] = []

    def per_name(kind: ConstraintKind, sense: Sense, idx: np.ndarray, value, bound) -> None:
        value = np.asarray(value, dtype=float)
        bound = np.broadcast_to(np.asarray(bound, dtype=float), value.shape)
        out.append(Family(kind, sense, value, bound, tuple(names[idx]), idx))

    def whole(kind: ConstraintKind, sense: Sense, value: float, bound: float) -> None:
        out.append(Family(kind, sense, np.array([value]), np.array([bound]), (None,)))

    every = np.arange(len(w))
    if c.long_only:
        per_name("long_only", "ge", every, w, 0.0)
    if c.excluded:
        idx = np.flatnonzero(book.excluded)
        per_name("excluded", "le", idx, absw[idx], 0.0)
    if c.max_weight is not None:
        per_name("max_weight", "le", every, absw, c.max_weight)
    if c.min_position is not None:
        idx = np.flatnonzero(absw > tol)
        per_name("min_position", "ge", idx, absw[idx], c.min_position)
    count = held_count(w, tol)
    if c.min_names is not None:
        whole("min_names", "ge", count, c.min_names)
    if c.max_names is not None:
        whole("max_names", "le", count, c.max_names)
    caps = sector_caps(book, c)
    if np.isfinite(caps).any():
        exposure = sector_exposure(w, book)
        idx = np.flatnonzero(np.isfinite(caps))
        subjects = tuple(book.sector_names[i] for i in idx)
        out.append(Family("sector_cap", "le", exposure[idx], caps[idx], subjects, idx))
    cash = 1.0 - math.fsum(w)
    if c.cash_floor is not None:
        whole("cash_floor", "ge", cash, c.cash_floor)
    if c.cash_ceiling is not None:
        whole("cash_ceiling", "le", cash, c.cash_ceiling)
    if c.max_gross is not None:
        whole("max_gross", "le", math.fsum(absw), c.max_gross)
    if c.max_turnover is not None and book.previous is not None:
        whole("max_turnover", "le", math.fsum(np.abs(w - book.previous)), c.max_turnover)
    return out


def book_violations(
    w: np.ndarray, book: Book, c: RiskConstraints, tol: float = FEASIBILITY_TOL
) -> list[Violation]:
    """Constraints broken by more than `tol` at weights `w` aligned with `book`."""
    found: list[Violation] = []
    for fam in families(w, book, c, tol):
        for i in np.flatnonzero(fam.excess() > tol):
            found.append(
                Violation(
                    constraint=fam.kind,
                    subject=fam.subjects[i],
                    bound=float(fam.bound[i]),
                    value=float(fam.value[i]),
                )
            )
    return found


def violations(
    weights: Weights,
    constraints: RiskConstraints,
    previous: Weights | None = None,
    sectors: Sectors | None = None,
    tol: float = FEASIBILITY_TOL,
) -> list[Violation]:
    """Every constraint `weights` break by more than `tol` (empty when feasible).

    A name is held when `|w| > tol`; sector exposure and gross exposure sum `|w|`;
    turnover is `sum |w - previous|` over names and applies only when `previous` is given.

    Raises:
        DataError: Duplicate or non-finite weights, or sector caps without sectors.
    """
    book = build_book(weights, constraints, previous, sectors)
    return book_violations(book.proposed, book, constraints, tol)


def is_feasible(
    weights: Weights,
    constraints: RiskConstraints,
    previous: Weights | None = None,
    sectors: Sectors | None = None,
    tol: float = FEASIBILITY_TOL,
) -> bool:
    """True when `weights` satisfy every constraint within `tol` (see `violations`)."""
    return not violations(weights, constraints, previous, sectors, tol)
