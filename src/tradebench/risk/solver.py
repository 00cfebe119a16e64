"""The convex part of the projection: least squares onto box bounds, sector caps, cash
bounds, gross exposure and a turnover L1 ball, solved by cvxpy with the bundled CLARABEL
solver at fixed tolerances, then polished to an exactly feasible point.

Polishing: the constraints active at the solver's point (within `ACTIVE_DELTAS`) are taken
as equalities, signs of `|w|` and `|w - w_old|` are frozen, and the equality-constrained
least-squares problem is solved in closed form with numpy. When the polished point is
feasible to `POLISH_TOL` and no farther from the proposal than the solver's, it replaces
it (it is then the exact projection for that active set); otherwise the solver's point,
clipped into its bounds, is kept if it is feasible to the caller's tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from tradebench.errors import ConfigError, MandateError

CVXPY_HINT = (
    "the mandate benchmark's projection solves with cvxpy: pip install 'tradebench[mandate]'"
)
"""The one line a missing cvxpy becomes."""
SOLVER = "CLARABEL"
SOLVER_OPTIONS: dict[str, float | int] = {
    "tol_gap_abs": 1e-10,
    "tol_gap_rel": 1e-10,
    "tol_feas": 1e-10,
    "max_iter": 200,
}
"""Fixed CLARABEL settings: tolerances tight enough that polishing finds the active set."""
ACTIVE_DELTAS = (1e-7, 1e-6, 1e-5)
"""A bound within this of the solver's point is taken as active when polishing; tried in
turn (a degenerate kink can leave the solver 1e-7 away from it)."""
POLISH_TOL = 1e-12
"""Largest violation a polished point may have."""


@dataclass(frozen=True)
class Convex:
    """min ||x - p||^2 over the free names, subject to the convex constraints.

    Names outside the free set are fixed at zero; their share of the turnover budget is
    already taken out of `turnover`.
    """

    p: np.ndarray
    lo: np.ndarray
    """Lower bound per name (`-inf` where none)."""
    hi: np.ndarray
    """Upper bound per name (`inf` where none)."""
    groups: np.ndarray
    """Sector rows: a 0/1 matrix (sectors x names) of the capped sectors."""
    caps: np.ndarray
    """Cap per sector row (sum of |x| over its names)."""
    sum_lo: float
    """Least invested weight, `1 - cash_ceiling` (`-inf` where none)."""
    sum_hi: float
    """Most invested weight, `1 - cash_floor` (`inf` where none)."""
    gross: float
    """Cap on sum |x| (`inf` where none)."""
    old: np.ndarray | None
    """Previous weights of the free names (None: no turnover constraint)."""
    turnover: float
    """Cap on sum |x - old| left for the free names (`inf` where none)."""

    @property
    def signed(self) -> bool:
        """True when some name may go short (|x| differs from x)."""
        return bool((self.lo < 0).any())

    def violation(self, x: np.ndarray) -> float:
        """Largest amount by which `x` breaks a constraint (<= 0 when feasible)."""
        ax = np.abs(x)
        parts = [np.max(self.lo - x, initial=-math.inf), np.max(x - self.hi, initial=-math.inf)]
        if len(self.caps):
            parts.append(float(np.max(self.groups @ ax - self.caps)))
        total = math.fsum(x)
        parts += [self.sum_lo - total, total - self.sum_hi, math.fsum(ax) - self.gross]
        if self.old is not None:
            parts.append(math.fsum(np.abs(x - self.old)) - self.turnover)
        return float(max(parts))

    def distance(self, x: np.ndarray) -> float:
        """Euclidean distance from the proposal."""
        return float(np.sqrt(np.sum((x - self.p) ** 2)))


def solve(problem: Convex, tol: float) -> np.ndarray:
    """The least-squares projection of `problem.p` onto its feasible set.

    Raises:
        MandateError: The constraints admit no portfolio over these names, or the solver
            could not reach a point feasible within `tol`.
    """
    if problem.violation(problem.p) <= 0:
        return problem.p.copy()
    if not len(problem.p):
        raise MandateError(
            "the risk constraints admit no portfolio over these names (none may be held); "
            "loosen the mandate or widen the pool of names"
        )
    x = _cvxpy(problem)
    for delta in ACTIVE_DELTAS:
        polished = polish(problem, x, delta)
        if polished is not None and problem.distance(polished) <= problem.distance(x) + 1e-9:
            return polished
    clipped = np.clip(x, problem.lo, problem.hi)
    clipped[np.abs(clipped) < POLISH_TOL] = 0.0
    if problem.violation(clipped) <= tol:
        return clipped
    raise MandateError(
        f"the projection solver ended {problem.violation(clipped):.2e} outside the feasible "
        "set; loosen the tightest constraints or report this case"
    )


def import_cvxpy() -> ModuleType:
    """cvxpy, imported on first use (it is the `mandate` extra's, about 200 MB with its
    solvers, not the core install's).

    Raises:
        ConfigError: cvxpy is not installed (`CVXPY_HINT`).
    """
    try:
        import cvxpy
    except ImportError as exc:
        raise ConfigError(CVXPY_HINT) from exc
    return cvxpy


def _cvxpy(problem: Convex) -> np.ndarray:
    cp = import_cvxpy()
    n = len(problem.p)
    x = cp.Variable(n)
    a = cp.abs(x) if problem.signed else x
    cons = []
    lo_i = np.flatnonzero(np.isfinite(problem.lo))
    hi_i = np.flatnonzero(np.isfinite(problem.hi))
    if len(lo_i):
        cons.append(x[lo_i] >= problem.lo[lo_i])
    if len(hi_i):
        cons.append(x[hi_i] <= problem.hi[hi_i])
    if len(problem.caps):
        cons.append(problem.groups @ a <= problem.caps)
    if math.isfinite(problem.sum_lo):
        cons.append(cp.sum(x) >= problem.sum_lo)
    if math.isfinite(problem.sum_hi):
        cons.append(cp.sum(x) <= problem.sum_hi)
    if math.isfinite(problem.gross):
        cons.append(cp.sum(a) <= problem.gross)
    if problem.old is not None and math.isfinite(problem.turnover):
        cons.append(cp.sum(cp.abs(x - problem.old)) <= problem.turnover)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(x - problem.p)), cons)
    try:
        prob.solve(solver=SOLVER, **SOLVER_OPTIONS)
    except cp.SolverError as exc:
        raise MandateError(f"the projection solver failed ({exc}); report this case") from None
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE) or x.value is None:
        raise MandateError(
            "the risk constraints admit no portfolio over these names (solver status "
            f"{prob.status}); loosen the mandate or widen the pool of names"
        )
    return np.asarray(x.value, dtype=float)


def polish(problem: Convex, x: np.ndarray, delta: float = ACTIVE_DELTAS[0]) -> np.ndarray | None:
    """The exact projection onto the face of the feasible set active at `x`, or None.

    None when the active set read from `x` gives a point that breaks a constraint by more
    than `POLISH_TOL`.
    """
    n = len(x)
    pin = np.full(n, np.nan)
    near_lo = x - problem.lo <= delta
    near_hi = problem.hi - x <= delta
    pin[near_lo] = problem.lo[near_lo]
    pin[near_hi & ~near_lo] = problem.hi[near_hi & ~near_lo]
    kinks = problem.signed and (len(problem.caps) > 0 or math.isfinite(problem.gross))
    if kinks:
        zero = np.isnan(pin) & (np.abs(x) <= delta)
        pin[zero] = 0.0
    if problem.old is not None and math.isfinite(problem.turnover):
        flat = np.isnan(pin) & (np.abs(x - problem.old) <= delta)
        pin[flat] = problem.old[flat]
    fixed = ~np.isnan(pin)
    ref = np.where(fixed, pin, x)
    rows, rhs = _active_rows(problem, ref, x, delta)
    free = ~fixed
    out = ref.copy()
    if free.any():
        p = problem.p[free]
        if rows:
            a = np.array(rows, dtype=float)
            b = np.array(rhs, dtype=float) - a[:, fixed] @ ref[fixed]
            af = a[:, free]
            lam = np.linalg.lstsq(af @ af.T, af @ p - b, rcond=None)[0]
            out[free] = p - af.T @ lam
        else:
            out[free] = p
    out[np.abs(out) < POLISH_TOL * 1e-3] = 0.0
    return out if problem.violation(out) <= POLISH_TOL else None


def _active_rows(
    problem: Convex, ref: np.ndarray, x: np.ndarray, delta: float
) -> tuple[list[np.ndarray], list[float]]:
    """Aggregate constraints active at `x`, as rows `a @ out == b` with frozen signs.

    `ref` is `x` with pinned names at their pin; a pinned name's row entry is the sign
    that makes `entry * pin` its contribution to the absolute-value sum.
    """
    rows: list[np.ndarray] = []
    rhs: list[float] = []
    s = np.sign(ref) if problem.signed else np.ones_like(ref)
    total = math.fsum(x)
    ones = np.ones_like(x)
    if math.isfinite(problem.sum_lo) and total - problem.sum_lo <= delta:
        rows.append(ones)
        rhs.append(problem.sum_lo)
    elif math.isfinite(problem.sum_hi) and problem.sum_hi - total <= delta:
        rows.append(ones)
        rhs.append(problem.sum_hi)
    for group, cap in zip(problem.groups, problem.caps, strict=True):
        if cap - float(group @ np.abs(x)) <= delta:
            rows.append(group * s)
            rhs.append(float(cap))
    if math.isfinite(problem.gross) and problem.gross - math.fsum(np.abs(x)) <= delta:
        rows.append(s)
        rhs.append(problem.gross)
    old = problem.old
    if old is not None and problem.turnover - math.fsum(np.abs(x - old)) <= delta:
        u = np.sign(ref - old)
        rows.append(u)
        rhs.append(problem.turnover + float(u @ old))
    return rows, rhs
