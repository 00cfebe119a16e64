"""Per-run caps on tokens and estimated cost, shared by every model of the run.

Before each real call (cache hits never get here) the budget reserves the call's worst
case: estimated input tokens plus `max_tokens` of output. If spent + reserved + this worst
case would cross a cap, the call is refused with `BudgetExceeded` before anything is sent,
so a cap is never crossed by more than the estimate's error. After the reply the
reservation is replaced by the real usage. `snapshot()` is the state to save with the run
and `Budget(config, state)` resumes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from tradebench.errors import BudgetExceeded, ConfigError
from tradebench.llm.adapter import estimate_tokens
from tradebench.llm.types import ChatResponse, Message, ModelConfig, ToolChoice, ToolSpec, Usage

if TYPE_CHECKING:
    from tradebench.llm.base import ChatModel


class Price(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(frozen=True)

    input_per_mtok: float = Field(ge=0)
    """Price of one million input (prompt) tokens."""
    output_per_mtok: float = Field(ge=0)
    """Price of one million output (completion) tokens."""

    def cost(self, usage: Usage) -> float:
        """USD for `usage`."""
        return (
            usage.input_tokens * self.input_per_mtok + usage.output_tokens * self.output_per_mtok
        ) / 1e6


class BudgetConfig(BaseModel):
    """Caps for one run and the price table used to estimate cost."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = Field(default=None, ge=1)
    """Cap on input + output tokens over the run; None = no cap."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Cap on estimated cost in USD; None = no cap. Needs a price for every model used."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Prices keyed by `provider:model` (or by bare model name)."""

    def price_for(self, config: ModelConfig) -> Price | None:
        """The price of `config`'s model, by `provider:model` first, then model name."""
        return self.prices.get(config.label) or self.prices.get(config.model)


class BudgetState(BaseModel):
    """What a run has spent so far; save it with the run to resume the budget."""

    schema_version: int = 1
    """Version of this record."""
    calls: int = 0
    """Real (uncached) calls charged."""
    input_tokens: int = 0
    """Input tokens spent."""
    output_tokens: int = 0
    """Output tokens spent."""
    cost_usd: float = 0.0
    """Estimated cost spent."""


class Reservation(BaseModel):
    """A call's worst case held against the caps while it is in flight."""

    model_config = ConfigDict(frozen=True)

    tokens: int
    """Tokens held."""
    cost_usd: float
    """Estimated USD held."""


class Budget:
    """Tracks spend against `BudgetConfig` caps for one run (one event loop)."""

    def __init__(self, config: BudgetConfig, state: BudgetState | None = None) -> None:
        """Start from `state` (a saved snapshot) or from zero."""
        self.config = config
        self._spent = (state or BudgetState()).model_copy()
        self._reserved_tokens = 0
        self._reserved_cost = 0.0

    def snapshot(self) -> BudgetState:
        """A copy of the spend so far (reservations of calls in flight excluded)."""
        return self._spent.model_copy()

    def require_price(self, model: ModelConfig) -> None:
        """Fail early when a cost cap is set but `model` has no price.

        Raises:
            ConfigError: No price for the model in the table.
        """
        if self.config.max_cost_usd is not None and self.config.price_for(model) is None:
            raise ConfigError(
                f"a cost cap is set but the price table has no entry for {model.label}; "
                f"add `prices: {{{model.label!r}: {{input_per_mtok: ..., output_per_mtok: ...}}}}`"
            )

    def reserve(self, model: ModelConfig, worst: Usage) -> Reservation:
        """Reserve a call's worst-case usage.

        Raises:
            BudgetExceeded: The call could cross a cap; nothing was reserved.
        """
        price = self.config.price_for(model)
        held = Reservation(tokens=worst.total, cost_usd=price.cost(worst) if price else 0.0)
        spent_tokens = self._spent.input_tokens + self._spent.output_tokens
        cap = self.config.max_tokens
        if cap is not None and spent_tokens + self._reserved_tokens + held.tokens > cap:
            raise BudgetExceeded(
                f"token budget reached: {spent_tokens:,} of {cap:,} tokens spent "
                f"({self._reserved_tokens:,} in flight); the next {model.label} call could need "
                f"{held.tokens:,}. The run stopped; raise the budget's max_tokens and resume "
                "(cached replies are free)."
            )
        cost_cap = self.config.max_cost_usd
        spent_cost = self._spent.cost_usd
        if cost_cap is not None and spent_cost + self._reserved_cost + held.cost_usd > cost_cap:
            raise BudgetExceeded(
                f"cost budget reached: ${spent_cost:.4f} of ${cost_cap:.4f} spent; the next "
                f"{model.label} call could cost ${held.cost_usd:.4f}. The run stopped; raise "
                "the budget's max_cost_usd and resume (cached replies are free)."
            )
        self._reserved_tokens += held.tokens
        self._reserved_cost += held.cost_usd
        return held

    def settle(self, model: ModelConfig, held: Reservation, usage: Usage | None) -> None:
        """Release `held` and charge the real `usage` (None = the call failed, no charge)."""
        self._reserved_tokens -= held.tokens
        self._reserved_cost -= held.cost_usd
        if usage is None:
            return
        price = self.config.price_for(model)
        self._spent = self._spent.model_copy(
            update={
                "calls": self._spent.calls + 1,
                "input_tokens": self._spent.input_tokens + usage.input_tokens,
                "output_tokens": self._spent.output_tokens + usage.output_tokens,
                "cost_usd": self._spent.cost_usd + (price.cost(usage) if price else 0.0),
            }
        )


class BudgetedModel:
    """A `ChatModel` that charges every real call to a shared `Budget`."""

    def __init__(self, inner: ChatModel, budget: Budget) -> None:
        """Wrap `inner`; fails early if a cost cap lacks this model's price."""
        budget.require_price(inner.config)
        self.inner = inner
        self.config = inner.config
        self.budget = budget

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """Reserve, call, then charge the real usage; see `ChatModel.generate`."""
        estimate = estimate_tokens(messages, self.config.max_tokens, tools)
        worst = Usage(
            input_tokens=estimate - self.config.max_tokens, output_tokens=self.config.max_tokens
        )
        held = self.budget.reserve(self.config, worst)
        response: ChatResponse | None = None
        try:
            response = await self.inner.generate(messages, tools, tool_choice, sample_index)
        finally:
            self.budget.settle(self.config, held, None if response is None else response.usage)
        return response
