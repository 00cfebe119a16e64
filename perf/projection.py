"""The projection critic against a general-purpose solver, side by side in one run.

For pools of 20, 100 and 300 names under a long-only mandate (max weight, sector caps, a
cash floor), random proposals that break it are projected by `tradebench.risk.project`
(cvxpy/CLARABEL, polished to exact feasibility) and by scipy's SLSQP on the same least
squares problem. Prints the median time per projection of each and the largest gap in
distance (the two must find the same nearest point).

    python perf/projection.py [--cases 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.optimize import minimize

from tradebench.risk import RiskConstraints, project

MANDATE = RiskConstraints(long_only=True, max_weight=0.10, max_sector_weight=0.30, cash_floor=0.02)
SECTORS = 8


def slsqp(p: np.ndarray, sector_of: np.ndarray) -> np.ndarray:
    """The same projection by SLSQP: min ||w - p||^2 under the mandate's linear limits."""
    cons = [{"type": "ineq", "fun": lambda w: 1.0 - MANDATE.cash_floor - w.sum()}]
    for s in range(SECTORS):
        mask = (sector_of == s).astype(float)
        cons.append({"type": "ineq", "fun": lambda w, m=mask: MANDATE.max_sector_weight - m @ w})
    res = minimize(
        lambda w: float((w - p) @ (w - p)),
        np.clip(p, 0, MANDATE.max_weight) * 0.5,
        jac=lambda w: 2 * (w - p),
        bounds=[(0.0, MANDATE.max_weight)] * len(p),
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 500},
    )
    return res.x


def main() -> None:
    """Time both on the same random cases and print one line per pool size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'names':>6} {'tradebench ms':>14} {'SLSQP ms':>10} {'ratio':>7} {'max |d gap|':>12}")
    for n in (20, 100, 300):
        ours, theirs, gaps = [], [], []
        for _ in range(args.cases):
            p = rng.dirichlet(np.ones(n)) * rng.uniform(1.0, 2.0)  # over-weight and over-invested
            sector_of = rng.integers(0, SECTORS, n)
            names = [f"N{i:03d}" for i in range(n)]
            sectors = {name: f"S{s}" for name, s in zip(names, sector_of, strict=True)}
            start = time.perf_counter()
            result = project(dict(zip(names, p, strict=True)), MANDATE, sectors=sectors)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            w = slsqp(p, sector_of)
            theirs.append(time.perf_counter() - start)
            mine = np.array([result.weights.get(name, 0.0) for name in names])
            gaps.append(abs(float(np.linalg.norm(mine - p)) - float(np.linalg.norm(w - p))))
        a, b = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
        print(f"{n:>6} {a:>14.1f} {b:>10.1f} {b / a:>6.1f}x {max(gaps):>12.2e}")


if __name__ == "__main__":
    main()
