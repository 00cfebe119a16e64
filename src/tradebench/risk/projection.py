"""The projection critic: proposed weights -> the nearest portfolio the mandate allows.

1. A proposal that satisfies every constraint (within `tol`) is returned unchanged: the
   same floats, no solver call.
2. Otherwise the convex constraints (long only, max weight, exclusions, sector caps, cash
   floor and ceiling, gross exposure, turnover as an L1 ball around the previous weights)
   define a convex set and the proposal is projected onto it by least squares (cvxpy,
   CLARABEL, then an exact polish: `tradebench.risk.solver`).
3. Cardinality (`min_names`, `max_names`) and `min_position` are not convex. When the
   convex projection already meets them it is the answer (and then the true nearest
   point). Otherwise a deterministic heuristic chooses which names may be held and the
   convex projection is redone on them (docs/risk.md, "Cardinality"): a good point,
   not proven nearest.

Every result is checked with `tradebench.risk.feasibility`, which knows nothing of the
solver.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from tradebench.errors import MandateError
from tradebench.risk.constraints import RiskConstraints, constraints_hash
from tradebench.risk.feasibility import (
    FEASIBILITY_TOL,
    Book,
    ConstraintKind,
    Family,
    Sectors,
    Weights,
    book_violations,
    build_book,
    families,
    held_count,
    sector_caps,
    sector_exposure,
)
from tradebench.risk.solver import SOLVER, Convex, solve

PROJECTION_VERSION = 1
ACTIVE_TOL = 1e-8
"""A constraint is binding when its value is within this of its bound."""
MIN_HELD_WEIGHT = 1e-6
"""|weight| the cardinality heuristic gives a name it must hold for `min_names` when the
mandate sets no `min_position` (0.0001% of NAV; it counts as held)."""
_ZERO_BOUND = frozenset({"long_only", "excluded"})


class ConstraintCheck(BaseModel):
    """One constraint at the proposal and at the projected portfolio."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    constraint: ConstraintKind
    """Which constraint (a field of `RiskConstraints`; `sector_cap` for either cap)."""
    subject: str | None
    """The name or sector it applies to; None for a portfolio-wide constraint."""
    bound: float
    """The bound (a weight, or a count of names for `min_names` / `max_names`)."""
    proposed: float
    """The constrained quantity at the proposal (a weight, |weight|, exposure, cash,
    gross, turnover or count of names)."""
    projected: float
    """The same quantity at the projected portfolio."""


class Projection(BaseModel):
    """What the critic did to one proposal."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    schema_version: int = PROJECTION_VERSION
    """Version of this record."""
    weights: dict[str, float]
    """Projected weights: every name of the proposal (in its order), then names of
    `previous` that keep a non-zero weight."""
    cash: float
    """`1 - sum(weights)`."""
    proposed_cash: float
    """`1 - sum(proposed)`."""
    distance: float
    """Euclidean distance between projected and proposed weights (0 when unchanged)."""
    changed: bool
    """False when the proposal was feasible and is returned as is."""
    binding: list[ConstraintCheck]
    """Constraints active at the projected portfolio (value within `ACTIVE_TOL` of the
    bound). `long_only` and `excluded` are listed only for names proposed at a non-zero
    weight, and `long_only` not for excluded names nor for names in `dropped`."""
    violated: list[ConstraintCheck]
    """Constraints the proposal broke by more than `tol`."""
    support_heuristic: bool = False
    """True when the cardinality heuristic chose which names may be held."""
    dropped: list[str] = []
    """Names the convex projection held that the heuristic set to zero."""
    added: list[str] = []
    """Names the convex projection left at zero that the heuristic made hold a position."""
    solver: str | None = None
    """Solver used; None when the proposal was returned unchanged."""
    constraints_hash: str
    """`constraints_hash` of the constraints applied."""


def project(
    proposed: Weights,
    constraints: RiskConstraints,
    *,
    previous: Weights | None = None,
    sectors: Sectors | None = None,
    tol: float = FEASIBILITY_TOL,
    min_held: float = MIN_HELD_WEIGHT,
) -> Projection:
    """Project proposed weights onto the portfolios `constraints` allow.

    Args:
        proposed: Name -> weight (fraction of NAV); cash is `1 - sum`. Names proposed at
            zero are names the projection may use (pass the pool with zeros).
        constraints: The compiled mandate.
        previous: Weights before this rebalance (for turnover); None: no turnover
            constraint (first rebalance). Its names may keep a weight.
        sectors: Name -> sector; required when the constraints cap sectors.
        tol: Feasibility tolerance; the result satisfies every constraint within it.
        min_held: |weight| the cardinality heuristic gives a name it adds to reach
            `min_names` when the mandate sets no `min_position` (a caller that trades
            whole shares passes what one share of the dearest name costs).

    Raises:
        DataError: Duplicate or non-finite weights, or sector caps without sectors.
        MandateError: No portfolio over these names satisfies the constraints.
    """
    book = build_book(proposed, constraints, previous, sectors)
    at_proposal = families(book.proposed, book, constraints, tol)
    if not any((f.excess() > tol).any() for f in at_proposal):
        return _record(book, constraints, book.proposed, tol, changed=False)
    candidates = ~book.excluded
    relaxed = _solve_on(book, constraints, candidates, None, tol)
    if not _cardinality_broken(relaxed, constraints, tol):
        return _record(book, constraints, relaxed, tol, changed=True)
    w = _heuristic(book, constraints, relaxed, tol, min_held)
    left = book_violations(w, book, constraints, tol)
    if left:
        raise MandateError(
            f"the cardinality heuristic ended outside the constraints ({left[0].constraint}); "
            "report this case"
        )
    return _record(book, constraints, w, tol, changed=True, relaxed=relaxed)


def _cardinality_broken(w: np.ndarray, c: RiskConstraints, tol: float) -> bool:
    count = held_count(w, tol)
    if c.max_names is not None and count > c.max_names:
        return True
    if c.min_names is not None and count < c.min_names:
        return True
    if c.min_position is not None:
        held = np.abs(w) > tol
        return bool((np.abs(w[held]) < c.min_position - tol).any())
    return False


def _convex(book: Book, c: RiskConstraints, free: np.ndarray, lower: np.ndarray | None) -> Convex:
    """The convex problem over the `free` names; `lower`: signed least |w| per free name."""
    n = int(free.sum())
    lo = np.full(n, 0.0 if c.long_only else -math.inf)
    hi = np.full(n, math.inf)
    if c.max_weight is not None:
        lo = np.maximum(lo, -c.max_weight)
        hi = np.minimum(hi, c.max_weight)
    if lower is not None:
        lo = np.where(lower > 0, np.maximum(lo, lower), lo)
        hi = np.where(lower < 0, np.minimum(hi, lower), hi)
    caps = sector_caps(book, c)
    capped = np.flatnonzero(np.isfinite(caps))
    codes = book.sector_code[free]
    groups = (codes[None, :] == capped[:, None]).astype(float)
    old, turnover = None, math.inf
    if c.max_turnover is not None and book.previous is not None:
        old = book.previous[free]
        turnover = c.max_turnover - math.fsum(np.abs(book.previous[~free]))
    return Convex(
        p=book.proposed[free],
        lo=lo,
        hi=hi,
        groups=groups,
        caps=caps[capped],
        sum_lo=-math.inf if c.cash_ceiling is None else 1.0 - c.cash_ceiling,
        sum_hi=math.inf if c.cash_floor is None else 1.0 - c.cash_floor,
        gross=math.inf if c.max_gross is None else c.max_gross,
        old=old,
        turnover=turnover,
    )


def _solve_on(
    book: Book, c: RiskConstraints, free: np.ndarray, lower: np.ndarray | None, tol: float
) -> np.ndarray:
    """The convex projection with every name outside `free` at zero."""
    problem = _convex(book, c, free, lower)
    if problem.turnover < -tol:
        raise MandateError(
            f"selling the names that must go to zero takes more turnover than the "
            f"{c.max_turnover:.2%} cap allows; loosen the turnover cap or the exclusions"
        )
    w = np.zeros(len(book.names))
    w[free] = solve(problem, tol)
    return w


def _rank(book: Book, keys: list[np.ndarray]) -> np.ndarray:
    """Book indices ordered by the keys (largest first), ties broken by name."""
    names = np.array(book.names)
    return np.lexsort([names, *[-np.abs(k) for k in reversed(keys)]])


def _support(book: Book, c: RiskConstraints, start: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`start` trimmed to `max_names` and filled to `min_names` in `order`."""
    support = start & ~book.excluded
    ranked = order[support[order]]
    if c.max_names is not None and len(ranked) > c.max_names:
        support = np.zeros_like(support)
        support[ranked[: c.max_names]] = True
    if c.min_names is not None and support.sum() < c.min_names:
        extra = order[~support[order] & ~book.excluded[order]]
        need = c.min_names - int(support.sum())
        if len(extra) < need:
            raise MandateError(
                f"the mandate asks for at least {c.min_names} names but only "
                f"{int(support.sum()) + len(extra)} are available; pass the whole pool "
                "(names at zero weight) or lower min_names"
            )
        support[extra[:need]] = True
    return support


def _heuristic(
    book: Book, c: RiskConstraints, relaxed: np.ndarray, tol: float, min_held: float
) -> np.ndarray:
    """Choose the names that may be held, then redo the convex projection on them."""
    absr = np.abs(relaxed)
    start = absr > tol
    if c.min_position is not None:
        start &= absr >= c.min_position / 2
    prev = np.zeros_like(relaxed) if book.previous is None else book.previous
    order = _rank(book, [book.proposed, relaxed, prev])
    supports = [_support(book, c, start, order)]
    if book.previous is not None:
        supports.append(_support(book, c, np.abs(prev) > tol, _rank(book, [prev, book.proposed])))
    floor = c.min_position or (min_held if c.min_names is not None else None)
    failure: MandateError | None = None
    for support in supports:
        lower = None
        if floor is not None:
            sign = _signs(book, c, relaxed)[support]
            lower = floor * sign
        try:
            return _solve_on(book, c, support, lower, tol)
        except MandateError as exc:
            failure = exc
    assert failure is not None
    raise MandateError(f"no portfolio on the names the cardinality rule keeps: {failure}")


def _signs(book: Book, c: RiskConstraints, relaxed: np.ndarray) -> np.ndarray:
    """Side of each name: the relaxed solution's, else the proposal's, else the previous
    weight's, else long."""
    if c.long_only:
        return np.ones(len(book.names))
    prev = np.zeros_like(relaxed) if book.previous is None else book.previous
    sign = np.sign(relaxed)
    for fallback in (np.sign(book.proposed), np.sign(prev), np.ones_like(relaxed)):
        sign = np.where(sign == 0, fallback, sign)
    return sign


def quantity(fam: Family, w: np.ndarray, book: Book, tol: float) -> np.ndarray:
    """The family's constrained quantity at weights `w`, for the same subjects."""
    if fam.kind == "long_only":
        assert fam.index is not None
        return w[fam.index]
    if fam.kind in ("excluded", "max_weight", "min_position"):
        assert fam.index is not None
        return np.abs(w[fam.index])
    if fam.kind == "sector_cap":
        assert fam.index is not None
        return sector_exposure(w, book)[fam.index]
    if fam.kind in ("min_names", "max_names"):
        return np.array([float(held_count(w, tol))])
    if fam.kind in ("cash_floor", "cash_ceiling"):
        return np.array([1.0 - math.fsum(w)])
    if fam.kind == "max_gross":
        return np.array([math.fsum(np.abs(w))])
    assert book.previous is not None
    return np.array([math.fsum(np.abs(w - book.previous))])


def _checks(
    fam: Family, mask: np.ndarray, proposed: np.ndarray, projected: np.ndarray
) -> list[ConstraintCheck]:
    return [
        ConstraintCheck(
            constraint=fam.kind,
            subject=fam.subjects[i],
            bound=float(fam.bound[i]),
            proposed=float(proposed[i]),
            projected=float(projected[i]),
        )
        for i in np.flatnonzero(mask)
    ]


def _record(
    book: Book,
    c: RiskConstraints,
    w: np.ndarray,
    tol: float,
    *,
    changed: bool,
    relaxed: np.ndarray | None = None,
) -> Projection:
    """Freeze the projected weights `w` (aligned with `book`) into a `Projection`;
    `relaxed`: the convex projection the cardinality heuristic started from."""
    p = book.proposed
    held_w = np.abs(w) > tol
    held_r = np.zeros_like(held_w) if relaxed is None else np.abs(relaxed) > tol
    dropped = held_r & ~held_w
    binding: list[ConstraintCheck] = []
    for fam in families(w, book, c, tol):
        active = np.abs(fam.value - fam.bound) <= ACTIVE_TOL
        if fam.kind in _ZERO_BOUND:
            assert fam.index is not None
            active &= p[fam.index] != 0
        if fam.kind == "long_only":
            assert fam.index is not None
            active &= ~book.excluded[fam.index] & ~dropped[fam.index]
        binding += _checks(fam, active, quantity(fam, p, book, tol), fam.value)
    violated: list[ConstraintCheck] = []
    for fam in families(p, book, c, tol):
        violated += _checks(fam, fam.excess() > tol, fam.value, quantity(fam, w, book, tol))
    keep = (np.arange(len(w)) < book.n_proposed) | (w != 0)
    names = np.array(book.names, dtype=object)
    return Projection(
        weights={str(n): float(x) for n, x in zip(names[keep], w[keep], strict=True)},
        cash=1.0 - math.fsum(w),
        proposed_cash=1.0 - math.fsum(p),
        distance=float(np.sqrt(np.sum((w - p) ** 2))),
        changed=changed,
        binding=binding,
        violated=violated,
        support_heuristic=relaxed is not None,
        dropped=[str(n) for n in names[dropped]],
        added=[] if relaxed is None else [str(n) for n in names[~held_r & held_w]],
        solver=SOLVER if changed else None,
        constraints_hash=constraints_hash(c),
    )
