"""The run's one budget and one reply cache on a Ray cluster, each owned by one actor.

`BudgetKeeper` holds the run's `Budget`: every worker reserves a call's worst case there
before sending it and settles the real usage after, one request at a time, so a cap holds
however many workers share it (the same reserve/settle rule as one process). `CacheKeeper`
owns the SQLite reply cache beside the run folder: every lookup and store of every worker
goes through it, so the first reply recorded for a key is the one every later request
gets, live or in replay, exactly as with one process. Both are pinned to the driver's node
and cost one local round trip per call (well under a millisecond beside a model call).
`RemoteBudget` and `RemoteCache` are what a worker's models are built with: they have the
awaited interface of `Budget` and `ResponseCache`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tradebench.llm.budget import Budget, BudgetConfig, BudgetState, Reservation
from tradebench.llm.cache import CacheMode, ResponseCache
from tradebench.llm.types import ChatResponse, ModelConfig, Usage
from tradebench.runs.ray_cluster import require_ray


class BudgetKeeper:
    """Actor body: the run's budget (serial calls, so reserve is atomic)."""

    def __init__(self, config: BudgetConfig, state: BudgetState | None) -> None:
        """Resume from `state` (the run's saved spend) or start from zero."""
        self.budget = Budget(config, state)

    def require_price(self, model: ModelConfig) -> None:
        """See `Budget.require_price` (records the price used in the run's state)."""
        self.budget.require_price(model)

    def reserve(self, model: ModelConfig, worst: Usage) -> Reservation:
        """See `Budget.reserve` (raises `BudgetExceeded` to the caller)."""
        return self.budget.reserve(model, worst)

    def settle(self, model: ModelConfig, held: Reservation, usage: Usage | None) -> None:
        """See `Budget.settle`."""
        self.budget.settle(model, held, usage)

    def snapshot(self) -> BudgetState:
        """The spend so far (saved by the driver as `budget.json`)."""
        return self.budget.snapshot()


class CacheKeeper:
    """Actor body: the run's reply cache file."""

    def __init__(self, path: str, mode: CacheMode) -> None:
        """Open the cache at `path` in `mode`."""
        self.cache = ResponseCache(path, mode)

    def get(self, key: str) -> ChatResponse | None:
        """See `ResponseCache.get`."""
        return self.cache.get(key)

    def put(self, key: str, model: str, request: str, response: ChatResponse) -> None:
        """See `ResponseCache.put`."""
        self.cache.put(key, model, request, response)

    def close(self) -> None:
        """Close the file (before the actor is killed)."""
        self.cache.close()


async def call(ref: Any) -> Any:
    """Await an actor call; an error raised in the actor is raised here as itself."""
    ray = require_ray()
    try:
        return await ref
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, Exception):
            raise cause from None
        raise


class RemoteBudget:
    """A worker's view of the `BudgetKeeper` (what `BudgetedModel` awaits)."""

    def __init__(self, keeper: Any, config: BudgetConfig) -> None:
        """Use the keeper actor `keeper`, whose caps and prices are `config`."""
        self.keeper = keeper
        self.config = config

    def require_price(self, model: ModelConfig) -> None:
        """See `Budget.require_price`, checked locally from the same config (the driver has
        recorded each model's price at the keeper before any worker starts)."""
        Budget(self.config).require_price(model)

    async def reserve_async(self, model: ModelConfig, worst: Usage) -> Reservation:
        """Reserve at the keeper (raises `BudgetExceeded` when a cap could be crossed)."""
        return await call(self.keeper.reserve.remote(model, worst))

    async def settle_async(
        self, model: ModelConfig, held: Reservation, usage: Usage | None
    ) -> None:
        """Settle at the keeper."""
        await call(self.keeper.settle.remote(model, held, usage))


class RemoteCache:
    """A worker's view of the `CacheKeeper` (what `CachedModel` awaits)."""

    def __init__(self, keeper: Any, path: Path, mode: CacheMode) -> None:
        """Use the keeper actor `keeper`, which owns the file `path` in `mode`."""
        self.keeper = keeper
        self.path = Path(path)
        self.mode: CacheMode = mode

    async def lookup(self, key: str) -> ChatResponse | None:
        """The cached reply for `key`, or None."""
        return await call(self.keeper.get.remote(key))

    async def store(self, key: str, model: str, request: str, response: ChatResponse) -> None:
        """Store a reply unless the key is present (the keeper applies the mode)."""
        await call(self.keeper.put.remote(key, model, request, response))


@dataclass
class Services:
    """The run's keeper actors (the cache one absent when the cache is off)."""

    budget: Any
    cache: Any | None
    config: BudgetConfig
    cache_path: Path
    cache_mode: CacheMode

    @classmethod
    def start(
        cls,
        config: BudgetConfig,
        state: BudgetState | None,
        cache_path: Path,
        cache_mode: CacheMode,
    ) -> Services:
        """Start both keepers on this (the driver's) node.

        Raises:
            ConfigError: Replay mode without a cache file.
            DataError: The cache file is not a reply cache.
        """
        ray = require_ray()
        here = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            ray.get_runtime_context().get_node_id(), soft=False
        )
        opts = {"num_cpus": 0, "scheduling_strategy": here, "max_restarts": 0}
        budget = ray.remote(BudgetKeeper).options(**opts).remote(config, state)
        cache = None
        if cache_mode != "off":
            ResponseCache(cache_path, cache_mode).close()  # fail here with a clear line
            cache = ray.remote(CacheKeeper).options(**opts).remote(str(cache_path), cache_mode)
        return cls(budget, cache, config, cache_path, cache_mode)

    def price_models(self, models: list[ModelConfig]) -> None:
        """Record each model's price at the keeper; fail before any episode when a cost cap
        lacks one.

        Raises:
            ConfigError: A cost cap is set and a model has no price.
        """
        ray = require_ray()
        for model in models:
            try:
                ray.get(self.budget.require_price.remote(model))
            except ray.exceptions.RayTaskError as exc:
                if isinstance(exc.cause, Exception):
                    raise exc.cause from None
                raise

    def remote_budget(self) -> RemoteBudget:
        """What workers charge."""
        return RemoteBudget(self.budget, self.config)

    def remote_cache(self) -> RemoteCache | None:
        """What workers read and write replies through (None when the cache is off)."""
        if self.cache is None:
            return None
        return RemoteCache(self.cache, self.cache_path, self.cache_mode)

    def snapshot(self) -> BudgetState:
        """The keeper's spend so far."""
        return require_ray().get(self.budget.snapshot.remote())

    def stop(self) -> None:
        """Close the cache file and end both actors."""
        ray = require_ray()
        if self.cache is not None:
            ray.get(self.cache.close.remote())
            ray.kill(self.cache)
        ray.kill(self.budget)
