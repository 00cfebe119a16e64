"""The tiered allocator of one step: capture -> constructor -> critic -> target weights."""

from __future__ import annotations

from dataclasses import dataclass

from tradebench.benchmarks.mandate.capture import CaptureStore
from tradebench.benchmarks.mandate.constructors import Constructor
from tradebench.benchmarks.mandate.loop import WEIGHT_EPS, StepPlan
from tradebench.market.ledger import AccountSnapshot
from tradebench.risk import RiskConstraints, project
from tradebench.view import MarketView


@dataclass
class AllocatorDecider:
    """Reads the day's capture, asks the constructor, projects with the critic.

    `once` rebalances on the first step and holds after it; `daily` on every step. The
    first rebalance has no turnover constraint (`previous=None`: it starts from cash).
    """

    constructor: Constructor
    store: CaptureStore
    constraints: RiskConstraints
    sectors: dict[str, str]
    cadence: str

    async def plan(self, view: MarketView, account: AccountSnapshot, index: int) -> StepPlan:
        """The step's targets and its record (capture hash, proposal, projection)."""
        if self.cadence == "once" and index > 0:
            return StepPlan(None, {"rebalance": False})
        loaded = self.store.load(view)
        current = {p.symbol: p.weight for p in account.positions}
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
        )
        info |= {
            "proposed": proposed,
            "projected": projection.weights,
            "distance": projection.distance,
            "changed": projection.changed,
            "support_heuristic": projection.support_heuristic,
            "binding": [c.model_dump(mode="json") for c in projection.binding],
            "violated": [c.model_dump(mode="json") for c in projection.violated],
        }
        targets = {n: w for n, w in projection.weights.items() if w > WEIGHT_EPS}
        return StepPlan(targets, info, proposal.decision, proposal.trace)
