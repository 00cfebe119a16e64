"""The single-stock agent protocol, its decision record, and the rule baselines.

LLM agents and baselines act through the same `SingleStockAgent.decide(context)`: the
context carries the observation (numbers, for rules) and the masked prompts (text, for
models). Baselines are registered factories, so runs record their name and arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tradebench.benchmarks.single_stock.ledger import Action
from tradebench.benchmarks.single_stock.observation import Observation
from tradebench.registry import Registry


@dataclass(frozen=True)
class DecisionContext:
    """Everything an agent may use at one decision."""

    observation: Observation
    """The day's observation (real dates; for rule agents)."""
    system: str
    """Masked system prompt (persona, rules, reply format)."""
    user: str
    """Masked daily message rendered from the observation."""


@dataclass(frozen=True)
class StepDecision:
    """One step's decision and what it took to get it.

    `action` is what the ledger executes: an unusable reply becomes `hold` with
    `valid=False`, which counts against discipline.
    """

    action: Action
    valid: bool = True
    sent: str | None = None
    """The action exactly as the agent sent it; None when nothing readable came back."""
    reason: str = ""
    confidence: float | None = None
    attempts: int = 0
    """Replies asked for (1 + nudges for a model; 0 for rules)."""
    nudges: int = 0
    """Format nudges sent after unusable replies."""
    parse_failures: int = 0
    """Replies that could not be read (garbage, malformed or truncated JSON, empty)."""
    empty_replies: int = 0
    """Replies with neither text nor a tool call."""
    tokens_in: int | None = None
    tokens_out: int | None = None
    faults_429: int | None = None
    """Endpoint faults by kind over the step's model calls (`runs.records.StepRow` has the
    same columns); None for rules, zero for replies from the cache."""
    faults_5xx: int | None = None
    faults_timeout: int | None = None
    faults_connection: int | None = None
    faults_other: int | None = None
    http_retries: int | None = None
    """HTTP attempts after the first, summed over the step's model calls (not `nudges`)."""
    retry_wait_s: float | None = None
    """Seconds of backoff slept between those attempts."""
    failed_attempt_s: float | None = None
    """Wall seconds spent in the attempts that failed."""
    tool_choice_fallbacks: int | None = None
    """Steps down the forced-call ladder (a `tool_choice` form rejected or ignored)."""
    trace: dict[str, Any] | None = None
    """Masked conversation and call records (models only), written to trace.jsonl."""

    def record(self) -> dict[str, Any]:
        """The JSON-able fields stored per step (everything but the trace)."""
        return {k: v for k, v in self.__dict__.items() if k != "trace"}


class SingleStockAgent(Protocol):
    """Decides buy, sell or hold at a decision day's close."""

    name: str

    async def decide(self, context: DecisionContext) -> StepDecision:
        """Return the step's decision."""
        ...


BASELINES: Registry[SingleStockAgent] = Registry("single-stock baseline")
"""Registered rule baselines (`buy_and_hold`, `always_hold`/`flat`, `momentum`)."""


@dataclass(frozen=True)
class ConstantAgent:
    """Always sends the same action."""

    action: Action
    name: str

    async def decide(self, context: DecisionContext) -> StepDecision:
        """The constant action, with a fixed reason."""
        return StepDecision(action=self.action, sent=self.action, reason=f"always {self.action}")


@BASELINES.register("buy_and_hold")
def buy_and_hold() -> ConstantAgent:
    """Always buy: long +1 from the first decision (buy-and-hold over the episode)."""
    return ConstantAgent("buy", "buy_and_hold")


@BASELINES.register("always_hold")
def always_hold() -> ConstantAgent:
    """Always hold: stays flat from the start (earns nothing)."""
    return ConstantAgent("hold", "always_hold")


@BASELINES.register("flat")
def flat() -> ConstantAgent:
    """Alias of `always_hold`."""
    return ConstantAgent("hold", "flat")


Signal = Literal["momentum_3d", "ret_5d", "ret_20d"]


@dataclass(frozen=True)
class MomentumAgent:
    """Buy when the signal is above `threshold`, sell below `-threshold`, else hold."""

    signal: Signal = "momentum_3d"
    threshold: float = 0.0
    name: str = "momentum"

    async def decide(self, context: DecisionContext) -> StepDecision:
        """Follow the sign of the chosen past return (hold when it is undefined)."""
        value = getattr(context.observation, self.signal)
        action: Action = "hold"
        if value is not None and value > self.threshold:
            action = "buy"
        elif value is not None and value < -self.threshold:
            action = "sell"
        return StepDecision(action=action, sent=action, reason=f"{self.signal}={value}")


@BASELINES.register("momentum")
def momentum(signal: Signal = "momentum_3d", threshold: float = 0.0) -> MomentumAgent:
    """Trend following on one past return of the observation."""
    if signal not in ("momentum_3d", "ret_5d", "ret_20d"):
        raise TypeError(f"signal must be momentum_3d, ret_5d or ret_20d, got {signal!r}")
    return MomentumAgent(signal=signal, threshold=float(threshold))
