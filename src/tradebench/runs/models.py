"""One pool of models per command: one reply cache, one token/cost budget, one rate limiter
per endpoint, a bound on concurrent work, and a clean stop at the budget.

Every model-backed command builds its models here (`tradebench run`, `mcq eval`,
`mcq mine`, `probe run`), so all of them share the same layers (adapter, budget, cache;
see `llm.base.get_model`) and the same resume rule: the budget's spend is saved beside the
outputs after every use of the pool, replies are cached, and rerunning the same command
after a budget stop continues where it stopped (cached replies are free).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

from tradebench.errors import BudgetExceeded, ConfigError
from tradebench.files import read_model, write_text_atomic
from tradebench.llm.base import ChatModel, get_model
from tradebench.llm.budget import Budget, BudgetConfig, BudgetState
from tradebench.llm.cache import CacheMode, ResponseCache
from tradebench.llm.limits import LimiterState, Limits, MinuteLimits, RateLimiter
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig

T = TypeVar("T")
R = TypeVar("R")

RESUME_HINT = "rerun the same command to continue (finished work is kept, cached replies are free)"


class BudgetStop(BudgetExceeded):
    """The budget stopped a command cleanly: its spend is saved and a rerun continues."""


def first_error(group: BaseException) -> BaseException:
    """The first leaf exception of a (possibly nested) exception group."""
    while isinstance(group, BaseExceptionGroup):
        group = group.exceptions[0]
    return group


class ModelPool:
    """The models of one command, sharing a cache, a budget and per-endpoint limits."""

    def __init__(
        self,
        *,
        budget: BudgetConfig | None = None,
        budget_file: Path | None = None,
        cache_path: Path | None = None,
        cache_mode: CacheMode = "readwrite",
        concurrency: int = 4,
        retry: RetryPolicy | None = None,
        limits: Limits | None = None,
        resume_hint: str = RESUME_HINT,
    ) -> None:
        """Open the cache (unless `cache_mode` is `off` or no path is given) and the budget.

        Args:
            budget: Caps and prices; None = no caps.
            budget_file: Where the spend is saved and resumed from (`budget.json`).
            cache_path: The SQLite reply cache.
            cache_mode: `readwrite`, `replay` or `off`.
            concurrency: Units of work (episodes, questions, probes) in flight at once.
            retry: Retry policy for transient faults; None = the default.
            limits: Limits applied to each endpoint (one limiter per `base_url`).
            resume_hint: What to tell the user after a budget stop.
        """
        self.budget_file = budget_file
        state = None
        if budget_file is not None and budget_file.exists():
            state = read_model(
                budget_file,
                BudgetState,
                "record of spend",
                "it holds the tokens and cost spent so far: restore it, or delete it to count "
                "the spend from zero (cached replies stay free)",
            )
        self.budget = Budget(budget or BudgetConfig(), state)
        self.cache: ResponseCache | None = None
        if cache_mode != "off" and cache_path is not None:
            self.cache = ResponseCache(cache_path, cache_mode)
        self.retry = retry
        self.limits = limits
        self.concurrency = concurrency
        self.resume_hint = resume_hint
        self._gate: asyncio.Semaphore | None = None
        self._models: dict[str, ChatModel] = {}
        self._limiters: dict[str, RateLimiter] = {}

    def model(
        self,
        config: ModelConfig,
        retry: RetryPolicy | None = None,
        limits: MinuteLimits | None = None,
    ) -> ChatModel:
        """The pool's model for `config` (built once per distinct configuration); `retry`
        overrides the pool's policy for this model, `limits` its rate limits (requests and
        tokens per minute, shared by every configuration of the same model and endpoint).

        Every endpoint gets a limiter, limits or not: an HTTP 429 halves the requests
        allowed in flight there and a Retry-After holds them all (`llm.limits`)."""
        key = config.model_dump_json() + (retry.model_dump_json() if retry else "")
        if key not in self._models:
            self._models[key] = get_model(
                config,
                cache=self.cache,
                budget=self.budget,
                limits=self._limiter(config, limits),
                retry=retry or self.retry,
            )
        return self._models[key]

    def _limiter(self, config: ModelConfig, limits: MinuteLimits | None) -> RateLimiter:
        """The limiter of `config`'s endpoint: one per `base_url` for the pool's limits,
        one per endpoint and model for a model's own `limits`."""
        endpoint = config.base_url or config.provider
        if limits is None:
            return self._limiters.setdefault(endpoint, RateLimiter(self.limits or Limits()))
        own = limits.limits()
        if self.limits is not None:
            own = own.model_copy(update={"max_concurrency": self.limits.max_concurrency})
        name = f"{endpoint} {config.model}"
        found = self._limiters.get(name)
        if found is not None and found.limits != own:
            raise ConfigError(
                f"{config.label} at {endpoint} has two different rate limits in one run; "
                "give every agent of that model and endpoint the same `limits`"
            )
        return self._limiters.setdefault(name, RateLimiter(own))

    def limiter_states(self) -> dict[str, LimiterState]:
        """Each endpoint limiter's state, by endpoint (and model, for a model's own)."""
        return {name: limiter.state() for name, limiter in self._limiters.items()}

    def limiter_line(self) -> str:
        """The limiters' states on one line for a progress display (empty before any)."""
        return "; ".join(
            f"{name}: {state.describe()}" for name, state in self.limiter_states().items()
        )

    async def bounded(self, fn: Callable[[T], Awaitable[R]], item: T) -> R:
        """`fn(item)`, started once one of the pool's `concurrency` slots is free."""
        if self._gate is None:  # created on the running loop
            self._gate = asyncio.Semaphore(self.concurrency)
        async with self._gate:
            return await fn(item)

    async def map(self, items: Iterable[T], fn: Callable[[T], Awaitable[R]]) -> list[R]:
        """`fn(item)` for every item, at most `concurrency` at a time, results in item order.

        Raises:
            BudgetStop: A cap was reached; the other items are cancelled and the spend saved.
            TradebenchError: The first failure of any item (not an exception group).
        """
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self.bounded(fn, item)) for item in items]
        except BaseExceptionGroup as failed:  # one clean error for the CLI, not a group
            budget = failed.subgroup(lambda e: isinstance(e, BudgetExceeded))
            if budget is not None:
                raise self.stopped(first_error(budget)) from None
            raise first_error(failed) from None
        finally:
            self.save()
        return [t.result() for t in tasks]

    def stopped(self, exc: BaseException) -> BudgetStop:
        """The clean-stop error for a budget error `exc` (the spend is saved first)."""
        self.save()
        if isinstance(exc, BudgetStop):
            return exc
        return BudgetStop(f"{exc} Stopped cleanly: {self.resume_hint}.")

    def save(self) -> None:
        """Write the spend so far to `budget_file` (when one is set)."""
        if self.budget_file is not None:
            self.budget_file.parent.mkdir(parents=True, exist_ok=True)
            text = self.budget.snapshot().model_dump_json(indent=2) + "\n"
            write_text_atomic(self.budget_file, text)

    def close(self) -> None:
        """Save the spend and close the cache."""
        self.save()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> ModelPool:
        """Use the pool as a context manager (closed on exit)."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the pool."""
        self.close()
