"""The projection on 200 seeded random cases, judged by code that shares nothing with it:
`is_feasible` (numpy), an SLSQP solve of a smooth reformulation (tests/risk/reference.py)
and an active-set computation written here.

Cases: 3-20 names in 1-4 sectors, long-only or long/short, a previous portfolio built to be
feasible (so the feasible set is never empty), random convex constraints around it (max
weight, sector caps, cash floor and ceiling, gross, turnover, exclusions of names the
previous portfolio does not hold) and a proposal scattered around it. Cardinality is left
to tests/risk/test_projection.py: its rule is a heuristic, not a nearest point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from pydantic import ValidationError

from tests.risk.reference import Spec, slsqp
from tradebench.risk import Projection, RiskConstraints, is_feasible, project

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

CASES = 200
SEED = 1337


@dataclass
class Case:
    names: list[str]
    sectors: dict[str, str]
    constraints: RiskConstraints
    proposed: dict[str, float]
    previous: dict[str, float] | None
    old: np.ndarray


def _try(fields: dict, key: str, value: object) -> None:
    """Add a field only if the constraints stay valid with it."""
    trial = {**fields, key: value}
    try:
        RiskConstraints(**trial)
    except ValidationError:
        return
    fields[key] = value


def random_case(rng: np.random.Generator) -> Case:
    n = int(rng.integers(3, 21))
    names = [f"N{i:02d}" for i in range(n)]
    k = int(rng.integers(1, 5))
    sectors = {m: f"S{int(rng.integers(k))}" for m in names}
    long_only = bool(rng.random() < 0.6)
    zero = rng.random(n) < 0.25
    if long_only:
        old = rng.dirichlet(np.ones(n)) * rng.uniform(0.5, 1.0)
    else:
        old = rng.normal(0.04, 0.12, n)
    old[zero] = 0.0
    fields: dict = {"long_only": long_only}
    if rng.random() < 0.5:
        _try(fields, "max_weight", min(1.0, float(np.abs(old).max() * rng.uniform(1.0, 1.6))))
    exposure = {
        s: float(sum(abs(old[i]) for i, m in enumerate(names) if sectors[m] == s))
        for s in set(sectors.values())
    }
    if rng.random() < 0.5:
        _try(fields, "max_sector_weight", float(max(exposure.values()) * rng.uniform(1.0, 1.3)))
    if rng.random() < 0.3:
        s = sorted(exposure)[0]
        _try(fields, "sector_caps", {s: float(exposure[s] * rng.uniform(1.0, 1.2))})
    cash = 1.0 - float(old.sum())
    if rng.random() < 0.4 and 0.0 <= cash <= 1.0:
        _try(fields, "cash_floor", float(rng.uniform(0.0, cash)))
    if rng.random() < 0.4 and 0.0 <= cash <= 1.0:
        _try(fields, "cash_ceiling", float(rng.uniform(cash, 1.0)))
    if rng.random() < 0.4:
        _try(fields, "max_gross", float(np.abs(old).sum() * rng.uniform(1.0, 1.2)))
    with_previous = rng.random() < 0.75
    if with_previous and rng.random() < 0.8:
        _try(fields, "max_turnover", float(rng.uniform(0.0, 0.6)))
    excluded = [m for i, m in enumerate(names) if zero[i] and rng.random() < 0.5]
    if excluded:
        _try(fields, "excluded", excluded)
    proposed = old + rng.normal(0.0, rng.uniform(0.03, 0.3), n)
    proposed[rng.random(n) < 0.2] = 0.0
    return Case(
        names=names,
        sectors=sectors,
        constraints=RiskConstraints(**fields),
        proposed=dict(zip(names, proposed.tolist(), strict=True)),
        previous=dict(zip(names, old.tolist(), strict=True)) if with_previous else None,
        old=old,
    )


@pytest.fixture(scope="module")
def solved() -> list[tuple[Case, Projection]]:
    rng = np.random.default_rng(SEED)
    cases = [random_case(rng) for _ in range(CASES)]
    return [
        (c, project(c.proposed, c.constraints, previous=c.previous, sectors=c.sectors))
        for c in cases
    ]


def _vector(case: Case, weights: dict[str, float]) -> np.ndarray:
    return np.array([weights.get(m, 0.0) for m in case.names])


def _spec(case: Case) -> Spec:
    old = None if case.previous is None else case.old
    return Spec.from_constraints(case.constraints, case.names, case.sectors, old)


def test_the_cases_exercise_every_constraint(solved: list[tuple[Case, Projection]]) -> None:
    changed = [p for _, p in solved if p.changed]
    assert len(changed) > CASES // 2
    bound = {b.constraint for _, p in solved for b in p.binding}
    assert bound >= {
        "long_only",
        "excluded",
        "max_weight",
        "sector_cap",
        "cash_floor",
        "cash_ceiling",
        "max_gross",
        "max_turnover",
    }


def test_every_projection_is_feasible_and_no_farther_than_an_independent_solver(
    solved: list[tuple[Case, Projection]],
) -> None:
    converged = 0
    for case, proj in solved:
        c = case.constraints
        assert is_feasible(proj.weights, c, case.previous, case.sectors, tol=1e-9)
        p = _vector(case, case.proposed)
        w = _vector(case, proj.weights)
        assert proj.distance == pytest.approx(float(np.linalg.norm(w - p)), abs=1e-12)
        ref, ok = slsqp(_spec(case), p, case.old)
        if not ok or not is_feasible(
            dict(zip(case.names, ref, strict=True)), c, case.previous, case.sectors, tol=1e-7
        ):
            continue
        converged += 1
        d_ref = float(np.linalg.norm(ref - p))
        assert proj.distance <= d_ref + 1e-7, case  # the reference is no closer
        assert proj.distance == pytest.approx(d_ref, abs=1e-5)
        # strong convexity: for the true nearest point x*, |y - x*|^2 <= d(y)^2 - d(x*)^2
        assert float(np.sum((ref - w) ** 2)) <= d_ref**2 - proj.distance**2 + 1e-6
    assert converged >= CASES * 0.9


def _quantities(case: Case, w: np.ndarray) -> dict[tuple[str, str | None], tuple[float, float]]:
    """(constraint, subject) -> (value at w, bound), computed here from the definitions."""
    c = case.constraints
    out: dict[tuple[str, str | None], tuple[float, float]] = {}
    for i, m in enumerate(case.names):
        if c.long_only:
            out[("long_only", m)] = (w[i], 0.0)
        if m in c.excluded:
            out[("excluded", m)] = (abs(w[i]), 0.0)
        if c.max_weight is not None:
            out[("max_weight", m)] = (abs(w[i]), c.max_weight)
    caps = {item.sector: item.cap for item in c.sector_caps}
    for s in sorted(set(case.sectors.values())):
        cap = caps.get(s, c.max_sector_weight)
        if cap is not None:
            members = [i for i, m in enumerate(case.names) if case.sectors[m] == s]
            out[("sector_cap", s)] = (float(np.abs(w[members]).sum()), cap)
    cash = 1.0 - float(w.sum())
    if c.cash_floor is not None:
        out[("cash_floor", None)] = (cash, c.cash_floor)
    if c.cash_ceiling is not None:
        out[("cash_ceiling", None)] = (cash, c.cash_ceiling)
    if c.max_gross is not None:
        out[("max_gross", None)] = (float(np.abs(w).sum()), c.max_gross)
    if c.max_turnover is not None and case.previous is not None:
        out[("max_turnover", None)] = (float(np.abs(w - case.old).sum()), c.max_turnover)
    return out


def test_binding_constraints_are_exactly_those_active_at_the_solution(
    solved: list[tuple[Case, Projection]],
) -> None:
    for case, proj in solved:
        p = _vector(case, case.proposed)
        w = _vector(case, proj.weights)
        at_w, at_p = _quantities(case, w), _quantities(case, p)
        active = {
            key
            for key, (value, bound) in at_w.items()
            if abs(value - bound) <= 1e-8
            and not (key[0] in ("long_only", "excluded") and case.proposed[key[1]] == 0.0)
            and not (key[0] == "long_only" and key[1] in case.constraints.excluded)
        }
        reported = {(b.constraint, b.subject): b for b in proj.binding}
        assert set(reported) == active, case
        for key, b in reported.items():
            assert b.bound == at_w[key][1]
            assert b.projected == pytest.approx(at_w[key][0], abs=1e-12)
            assert b.proposed == pytest.approx(at_p[key][0], abs=1e-12)


def _only_binding(case: Case, proj: Projection) -> Spec:
    """The case's feasible set keeping only the binding constraints (and every sign bound
    of long-only and exclusions, which the report lists only for proposed names)."""
    full = _spec(case)
    binding = {(b.constraint, b.subject) for b in proj.binding}
    c = case.constraints
    n = len(case.names)
    lo = np.full(n, 0.0 if c.long_only else -np.inf)
    hi = np.full(n, np.inf)
    for i, m in enumerate(case.names):
        if m in c.excluded:
            lo[i] = hi[i] = 0.0
        elif ("max_weight", m) in binding:
            assert c.max_weight is not None
            if proj.weights[m] > 0:
                hi[i] = c.max_weight
            else:
                lo[i] = -c.max_weight
    kept = Spec(n=n, lo=lo, hi=hi)
    subjects = sorted({s for s in case.sectors.values()})
    capped = [s for s in subjects if ("sector_cap", s) in binding]
    names_of = {s: np.array([case.sectors[m] == s for m in case.names], float) for s in subjects}
    kept.sectors = [
        (mask, cap)
        for mask, cap in full.sectors
        if any(np.array_equal(mask, names_of[s]) for s in capped)
    ]
    if ("cash_floor", None) in binding:
        kept.sum_hi = full.sum_hi
    if ("cash_ceiling", None) in binding:
        kept.sum_lo = full.sum_lo
    if ("max_gross", None) in binding:
        kept.gross = full.gross
    if ("max_turnover", None) in binding:
        kept.old, kept.turnover = full.old, full.turnover
    return kept


def test_the_binding_constraints_alone_pin_the_projection(
    solved: list[tuple[Case, Projection]],
) -> None:
    """Dropping every constraint not reported as binding leaves the projection where it
    is: the report names every constraint that shaped the result."""
    checked = 0
    for case, proj in solved:
        if not proj.changed:
            continue
        p = _vector(case, case.proposed)
        w = _vector(case, proj.weights)
        ref, ok = slsqp(_only_binding(case, proj), p, case.old)
        if not ok:
            continue
        checked += 1
        assert float(np.linalg.norm(ref - p)) == pytest.approx(proj.distance, abs=1e-5), case
        assert np.abs(ref - w).max() <= 1e-3, case
    assert checked >= CASES // 2
