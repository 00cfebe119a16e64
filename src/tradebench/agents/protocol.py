"""The `Agent` protocol every agent implements, LLM or rule-based, and its `Decision`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action
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


class Agent(Protocol):
    """Decides before T's open from the point-in-time view and the account at T-1's close."""

    name: str

    async def decide(self, view: MarketView, account: AccountSnapshot) -> Decision:
        """Return the step's decision; orders fill at T's open."""
        ...


AGENTS: Registry[Agent] = Registry("agent")
