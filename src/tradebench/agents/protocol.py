"""The `Agent` protocol every agent implements, LLM or rule-based, its `Decision`, and the
registry of agents by name (`AGENTS`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from tradebench.llm.types import CallFaults
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action, OrderRecord
from tradebench.registry import Registry
from tradebench.view import MarketView


@dataclass(frozen=True)
class Decision:
    """An agent's action for one step plus what it cost to reach it.

    The LLM diagnostics stay None for rule-based agents, so metrics read them as null.
    """

    action: Action
    parse_failures: int | None = None
    tool_calls: int | None = None
    tool_calls_valid: int | None = None
    retries: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    fallback: bool | None = None
    """True when no submission passed validation after the retries (the step holds)."""
    research_cap_hit: bool | None = None
    """True when research stopped at the safety cap on tool calls."""
    faults: CallFaults | None = None
    """HTTP retries and transient faults summed over the step's model calls (None for
    rule agents; zero for replies from the cache)."""
    sent_ids: tuple[str, ...] | None = None
    trace: dict[str, Any] | None = None


@dataclass(frozen=True)
class StepInfo:
    """Where the episode stands when the agent decides (all known before T's open).

    Attributes:
        index: 1-based step number; total: steps in the episode.
        first_day: the episode's first decision day (the origin of relative day labels).
        previous: the previous step's execution records (empty on the first step).
        cum_return: NAV at T-1's close over the initial cash, minus 1.
        bench_return: benchmark close at T-1 over its level before the episode, minus 1.
    """

    index: int
    total: int
    first_day: Any
    previous: tuple[OrderRecord, ...] = field(default_factory=tuple)
    cum_return: float = 0.0
    bench_return: float = 0.0


class Agent(Protocol):
    """Decides before T's open from the point-in-time view and the account at T-1's close."""

    name: str

    async def decide(self, view: MarketView, account: AccountSnapshot, step: StepInfo) -> Decision:
        """Return the step's decision; orders fill at T's open."""
        ...


AGENTS: Registry[Agent] = Registry("agent", group="tradebench.agents", paths=True)
"""Agents of the broker benchmarks by name, each a factory called with the spec entry's
`args` (and `lot_size`, the market's board lot, when it takes that argument): the rule
baselines (`agents.baselines`), the factor models (`agents.factor.agent`), the entry points
of installed packages (group `tradebench.agents`) and any `module:Class` path. docs/agents.md
documents the protocol with a complete example package."""
