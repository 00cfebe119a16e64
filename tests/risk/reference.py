"""An independent reference for the projection: scipy's SLSQP on a smooth reformulation,
built from the constraints by its own code (no cvxpy, nothing from `tradebench.risk`
except the constraints model).

Variables: weights `w`, and where absolute values appear, `g >= |w|` (gross and sector
exposure when shorts are allowed) and `t >= |w - old|` (turnover). Every constraint is
then linear, the objective `||w - p||^2` is smooth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from tradebench.risk import RiskConstraints


@dataclass
class Spec:
    """The convex feasible set over `n` names, constraint by constraint."""

    n: int
    lo: np.ndarray
    hi: np.ndarray
    sectors: list[tuple[np.ndarray, float]] = field(default_factory=list)
    """(0/1 mask over names, cap on sum |w|)."""
    sum_lo: float = -np.inf
    sum_hi: float = np.inf
    gross: float = np.inf
    old: np.ndarray | None = None
    turnover: float = np.inf

    @classmethod
    def from_constraints(
        cls,
        c: RiskConstraints,
        names: Sequence[str],
        sectors: dict[str, str] | None,
        old: np.ndarray | None,
    ) -> Spec:
        n = len(names)
        lo = np.full(n, 0.0 if c.long_only else -np.inf)
        hi = np.full(n, np.inf)
        if c.max_weight is not None:
            lo, hi = np.maximum(lo, -c.max_weight), np.minimum(hi, c.max_weight)
        for i, name in enumerate(names):
            if name in c.excluded:
                lo[i] = hi[i] = 0.0
        spec = cls(n=n, lo=lo, hi=hi)
        caps = {item.sector: item.cap for item in c.sector_caps}
        for sector in sorted(set((sectors or {}).values())):
            cap = caps.get(sector, c.max_sector_weight)
            if cap is not None:
                mask = np.array([(sectors or {}).get(m) == sector for m in names], dtype=float)
                spec.sectors.append((mask, cap))
        if c.cash_ceiling is not None:
            spec.sum_lo = 1.0 - c.cash_ceiling
        if c.cash_floor is not None:
            spec.sum_hi = 1.0 - c.cash_floor
        if c.max_gross is not None:
            spec.gross = c.max_gross
        if c.max_turnover is not None and old is not None:
            spec.old, spec.turnover = old, c.max_turnover
        return spec


def slsqp(spec: Spec, p: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, bool]:
    """min ||w - p||^2 over `spec`, from a feasible `start`; (w, converged)."""
    n = spec.n
    shorts = bool((spec.lo < 0).any())
    use_g = shorts and (bool(spec.sectors) or np.isfinite(spec.gross))
    use_t = spec.old is not None and np.isfinite(spec.turnover)
    ng, nt = (n if use_g else 0), (n if use_t else 0)
    size = n + ng + nt

    def w_of(z: np.ndarray) -> np.ndarray:
        return z[:n]

    rows: list[tuple[np.ndarray, float]] = []  # a @ z <= b

    def row(where: slice, values: np.ndarray, b: float) -> None:
        a = np.zeros(size)
        a[where] = values
        rows.append((a, b))

    ws, gs, ts = slice(0, n), slice(n, n + ng), slice(n + ng, size)
    abs_part = gs if use_g else ws
    for mask, cap in spec.sectors:
        row(abs_part, mask, cap)
    if np.isfinite(spec.gross):
        row(abs_part, np.ones(n), spec.gross)
    if np.isfinite(spec.sum_hi):
        row(ws, np.ones(n), spec.sum_hi)
    if np.isfinite(spec.sum_lo):
        row(ws, -np.ones(n), -spec.sum_lo)
    if use_t:
        row(ts, np.ones(n), spec.turnover)
    eye = np.eye(n)
    zg, zt = np.zeros((n, ng)), np.zeros((n, nt))
    linear: list[tuple[np.ndarray, np.ndarray]] = []  # a @ z + c >= 0
    if rows:
        linear.append((-np.array([r[0] for r in rows]), np.array([r[1] for r in rows])))
    if use_g:  # g - w >= 0, g + w >= 0
        linear.append((np.hstack([-eye, eye, zt]), np.zeros(n)))
        linear.append((np.hstack([eye, eye, zt]), np.zeros(n)))
    if use_t:  # t - (w - old) >= 0, t + (w - old) >= 0
        assert spec.old is not None
        linear.append((np.hstack([-eye, zg, eye]), spec.old))
        linear.append((np.hstack([eye, zg, eye]), -spec.old))
    a_all = np.vstack([a for a, _ in linear]) if linear else np.zeros((0, size))
    c_all = np.concatenate([c for _, c in linear]) if linear else np.zeros(0)
    cons = []
    if len(c_all):
        cons.append({"type": "ineq", "fun": lambda z: a_all @ z + c_all, "jac": lambda z: a_all})
    bounds = [
        (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
        for lo, hi in zip(spec.lo, spec.hi, strict=True)
    ]
    bounds += [(0.0, None)] * (ng + nt)
    z0 = np.concatenate(
        [start, np.abs(start)[:ng], np.abs(start - (spec.old if use_t else 0))[:nt]]
    )

    def objective(z: np.ndarray) -> float:
        d = w_of(z) - p
        return float(d @ d)

    def gradient(z: np.ndarray) -> np.ndarray:
        grad = np.zeros(size)
        grad[:n] = 2 * (w_of(z) - p)
        return grad

    res = minimize(
        objective,
        z0,
        jac=gradient,
        bounds=bounds,
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    return w_of(res.x), bool(res.success)
