"""Per-run caps on tokens and estimated cost, shared by every model of the run.

Before each real call (cache hits never get here) the budget reserves the call's worst
case: estimated input tokens plus `max_tokens` of output. If spent + reserved + this worst
case would cross a cap, the call is refused with `BudgetExceeded` before anything is sent,
so a cap is never crossed by more than the estimate's error. After the reply the
reservation is replaced by the real usage. `snapshot()` is the state to save with the run
and `Budget(config, state)` resumes it.

Prices come from `llm.prices`: the spec's table overrides genai-prices. The quote used for
each model (source, rates, date) is recorded in the state; a model without a price is
charged its tokens but no cost (`unpriced_calls` counts its calls: the run's cost is then
unknown, never 0), and a cost cap refuses such a model unless `allow_unknown_price` is set.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import date
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from tradebench.errors import BudgetExceeded, ConfigError
from tradebench.llm.adapter import estimate_tokens
from tradebench.llm.prices import Price, PriceQuote, quote_price
from tradebench.llm.types import ChatResponse, Message, ModelConfig, ToolChoice, ToolSpec, Usage

if TYPE_CHECKING:
    from tradebench.llm.base import ChatModel


class BudgetConfig(BaseModel):
    """Caps for one run and the price table used to estimate cost."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = Field(default=None, ge=1)
    """Cap on input + output tokens over the run; None = no cap."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Cap on estimated cost in USD; None = no cap. Needs a price for every model used."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Prices keyed by `provider:model` (or by bare model name); they override genai-prices."""
    allow_unknown_price: bool = False
    """Run under `max_cost_usd` even with a model no source prices (its cost is unknown
    and not capped)."""
    price_date: date | None = None
    """Day whose genai-prices are used; None = today (UTC), recorded with the spend."""

    def quote_for(self, config: ModelConfig) -> PriceQuote:
        """The price of `config`'s model and its source (`llm.prices.quote_price`)."""
        return quote_price(config, self.prices, self.price_date)

    def price_for(self, config: ModelConfig) -> Price | None:
        """The price of `config`'s model: the table's, else genai-prices', else None."""
        return self.quote_for(config).price

    def check_prices(self, models: Iterable[ModelConfig]) -> None:
        """Fail before a run starts when a cost cap is set and a model has no price.

        Raises:
            ConfigError: One line naming the model, how to price it and how to allow it.
        """
        if self.max_cost_usd is None or self.allow_unknown_price:
            return
        for model in models:
            quote = self.quote_for(model)
            if not quote.known:
                raise ConfigError(
                    f"a cost cap is set but no price is known for {model.label} (the price "
                    f"table has no entry for {model.label} and {quote.source_version} lacks "
                    f"it): add `budget.prices` in the spec (or `--price {model.label}=IN,OUT` "
                    "where the command has it), or run with "
                    "`--allow-unknown-price` (spec: `budget.allow_unknown_price: true`) to "
                    "leave its cost unknown and uncapped"
                )


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
    """Estimated cost spent by priced models."""
    unpriced_calls: int = 0
    """Real calls of models without a price: when > 0 the total cost is unknown."""
    prices: dict[str, PriceQuote] = Field(default_factory=dict)
    """The price used per `provider:model`, with its source and date."""

    @property
    def total_cost_usd(self) -> float | None:
        """The cost spent, or None (unknown) when an unpriced model made real calls."""
        return None if self.unpriced_calls else self.cost_usd


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
        self._spent = (state or BudgetState()).model_copy(deep=True)
        self._reserved_tokens = 0
        self._reserved_cost = 0.0

    def snapshot(self) -> BudgetState:
        """A copy of the spend so far (reservations of calls in flight excluded)."""
        return self._spent.model_copy(deep=True)

    def quote(self, model: ModelConfig) -> PriceQuote:
        """The price used for `model`, recorded in the state. The spec's table wins; else a
        genai-prices (or unknown) quote saved by an earlier part of this run is kept unless
        `price_date` pins another day, so a resumed run keeps its prices."""
        saved = self._spent.prices.get(model.label)
        fresh = self.config.quote_for(model)
        keep = saved is not None and "spec" not in (saved.source, fresh.source)
        quote = saved if keep and self.config.price_date in (None, saved.priced_on) else fresh
        if saved != quote:
            self._spent.prices[model.label] = quote
        return quote

    def require_price(self, model: ModelConfig) -> None:
        """Record `model`'s price; fail early when a cost cap is set and it has none.

        Raises:
            ConfigError: No price for the model and unknown prices are not allowed.
        """
        self.quote(model)
        self.config.check_prices([model])

    def reserve(self, model: ModelConfig, worst: Usage) -> Reservation:
        """Reserve a call's worst-case usage.

        Raises:
            BudgetExceeded: The call could cross a cap; nothing was reserved.
        """
        price = self.quote(model).price
        held = Reservation(tokens=worst.total, cost_usd=price.request_cost(worst) if price else 0.0)
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

    async def reserve_async(self, model: ModelConfig, worst: Usage) -> Reservation:
        """`reserve` as a coroutine: the interface `BudgetedModel` awaits, so a budget owned
        by another process (`runs.ray.services.RemoteBudget`) can stand in for this one."""
        return self.reserve(model, worst)

    async def settle_async(
        self, model: ModelConfig, held: Reservation, usage: Usage | None
    ) -> None:
        """`settle` as a coroutine (see `reserve_async`)."""
        self.settle(model, held, usage)

    def headroom(self) -> tuple[float, float]:
        """Tokens and USD still free under the caps after the spend and every reservation
        (infinite where there is no cap)."""
        tokens, cost = math.inf, math.inf
        if self.config.max_tokens is not None:
            spent = self._spent.input_tokens + self._spent.output_tokens
            tokens = self.config.max_tokens - spent - self._reserved_tokens
        if self.config.max_cost_usd is not None:
            cost = self.config.max_cost_usd - self._spent.cost_usd - self._reserved_cost
        return tokens, cost

    def hold(self, held: Reservation) -> None:
        """Add `held` to the reservations without a check (the caller sized it within
        `headroom`)."""
        self._reserved_tokens += held.tokens
        self._reserved_cost += held.cost_usd

    def release(self, held: Reservation) -> None:
        """Free `held` without a charge (a call that never completed)."""
        self._reserved_tokens -= held.tokens
        self._reserved_cost -= held.cost_usd

    def settle(self, model: ModelConfig, held: Reservation, usage: Usage | None) -> None:
        """Release `held` and charge the real `usage` (None = the call failed, no charge)."""
        self.release(held)
        if usage is None:
            return
        price = self.quote(model).price
        self._spent = self._spent.model_copy(
            update={
                "calls": self._spent.calls + 1,
                "input_tokens": self._spent.input_tokens + usage.input_tokens,
                "output_tokens": self._spent.output_tokens + usage.output_tokens,
                "cost_usd": self._spent.cost_usd + (price.request_cost(usage) if price else 0.0),
                "unpriced_calls": self._spent.unpriced_calls + (price is None),
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
        held = await self.budget.reserve_async(self.config, worst)
        response: ChatResponse | None = None
        try:
            response = await self.inner.generate(messages, tools, tool_choice, sample_index)
        finally:
            usage = None if response is None else response.usage
            await self.budget.settle_async(self.config, held, usage)
        return response
