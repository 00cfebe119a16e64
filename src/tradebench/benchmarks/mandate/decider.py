"""The tiered allocator of one step: capture -> constructor -> critic -> target weights."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tradebench.benchmarks.mandate.capture import CaptureStore
from tradebench.benchmarks.mandate.constructors import Constructor
from tradebench.benchmarks.mandate.target_agent import WEIGHT_EPS, StepPlan
from tradebench.errors import MandateError
from tradebench.market.ledger import AccountSnapshot
from tradebench.risk import MIN_HELD_WEIGHT, Projection, RiskConstraints, project, violations
from tradebench.view import MarketView


def projection_info(projection: Projection) -> dict[str, Any]:
    """The journaled record of a projection."""
    return {
        "projected": projection.weights,
        "distance": projection.distance,
        "changed": projection.changed,
        "support_heuristic": projection.support_heuristic,
        "binding": [c.model_dump(mode="json") for c in projection.binding],
        "violated": [c.model_dump(mode="json") for c in projection.violated],
    }


@dataclass
class AllocatorDecider:
    """Reads the day's capture, asks the constructor, projects with the critic.

    `once` rebalances on the first step and holds after it; `daily` on every step. The
    first rebalance has no turnover constraint (`previous=None`: it starts from cash).
    With `drift_tolerance` set (drift control), a held step whose book at the last close
    breaks a bound by more than it is a *drift rebalance*: the held book is projected onto
    the mandate (no capture read, no constructor call).
    """

    constructor: Constructor
    store: CaptureStore
    constraints: RiskConstraints
    sectors: dict[str, str]
    cadence: str
    drift_tolerance: float | None = None
    lot: int = 1

    def _min_held(self, view: MarketView, nav: float) -> float:
        """One lot of the dearest pool name at the last close, as a weight (plus 1%): the
        least a name added for `min_names` must weigh for the broker to buy it."""
        close = view.last("close")
        prices = [float(close[view.column(n)]) for n in self.store.pool]
        dearest = max((p for p in prices if np.isfinite(p)), default=0.0)
        return min(1.0, max(MIN_HELD_WEIGHT, 1.01 * self.lot * dearest / nav)) if nav > 0 else 1.0

    async def plan(self, view: MarketView, account: AccountSnapshot, index: int) -> StepPlan:
        """The step's targets and its record (capture hash, proposal, projection)."""
        current = {p.symbol: p.weight for p in account.positions}
        if self.cadence == "once" and index > 0:
            return self._hold(current, self._min_held(view, account.nav))
        loaded = await self.store.load(view)
        proposal = await self.constructor.propose(loaded, current)
        info = {
            "rebalance": True,
            "capture_sha256": loaded.sha256,
            "citation_violations": len(loaded.capture.violations),
            "invalid_proposals": proposal.invalid,
            "feedback_codes": list(proposal.codes),
            "rationale": proposal.rationale,
        }
        if proposal.weights is None:
            info["fallback"] = True
            return StepPlan(None, info, proposal.decision, proposal.trace)
        proposed = {n: float(proposal.weights.get(n, 0.0)) for n in self.store.pool}
        projection = project(
            proposed,
            self.constraints,
            previous=current if index > 0 else None,
            sectors=self.sectors or None,
            min_held=self._min_held(view, account.nav),
        )
        info |= {"proposed": proposed, **projection_info(projection)}
        targets = {n: w for n, w in projection.weights.items() if w > WEIGHT_EPS}
        return StepPlan(targets, info, proposal.decision, proposal.trace)

    def _hold(self, current: dict[str, float], min_held: float) -> StepPlan:
        """Hold, unless drift control finds the held book beyond a bound."""
        if self.drift_tolerance is None:
            return StepPlan(None, {"rebalance": False})
        held = {n: float(current.get(n, 0.0)) for n in self.store.pool}
        breaches = violations(
            held, self.constraints, sectors=self.sectors or None, tol=self.drift_tolerance
        )
        if not breaches:
            return StepPlan(None, {"rebalance": False})
        info: dict = {
            "rebalance": False,
            "drift_rebalance": True,
            "drift_breaches": [b.model_dump(mode="json") for b in breaches],
            "proposed": held,
        }
        try:
            projection = project(
                held,
                self.constraints,
                previous=current,
                sectors=self.sectors or None,
                min_held=min_held,
            )
        except MandateError as exc:  # e.g. a turnover cap too tight to undo the drift
            return StepPlan(None, info | {"drift_unresolved": str(exc)})
        info |= projection_info(projection)
        targets = {n: w for n, w in projection.weights.items() if w > WEIGHT_EPS}
        return StepPlan(targets, info)
