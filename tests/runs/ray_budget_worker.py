"""A Ray task for the shared-budget test: distinct requests through the run's one budget
until it refuses one. Kept apart from the test module so a worker imports only this."""

from __future__ import annotations

import asyncio

from tradebench.errors import BudgetExceeded
from tradebench.llm.base import get_model
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import Message, ModelConfig
from tradebench.runs.ray.services import Services

MAX_TOKENS = 64


def spend_until_refused(services: Services, url: str, first: int) -> int:
    """Calls made (sample indices from `first`) before the budget refused one; the lease's
    unspent part goes back to the keeper at the end, as a model worker's does."""
    config = ModelConfig(provider="openai", model="m", base_url=url, max_tokens=MAX_TOKENS)
    budget = services.remote_budget()
    model = get_model(config, budget=budget, retry=RetryPolicy(max_attempts=1))
    calls = 0

    async def loop() -> None:
        nonlocal calls
        while True:
            try:
                await model.generate(
                    [Message(role="user", content="ping")], sample_index=first + calls
                )
            except BudgetExceeded:
                await budget.close()
                return
            calls += 1

    asyncio.run(loop())
    return calls
