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

A worker that dies holds its calls' reservations forever unless someone frees them. Each
model worker reserves as a `Holder`: its slot in the pool and an id drawn when the process
starts. When Ray restarts a slot's actor, the new process's first reservation tells the
keeper that the slot's previous process is gone, and the keeper frees what that process
still held; a late settle from it charges its usage and frees nothing twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tradebench.llm.budget import Budget, BudgetConfig, BudgetState, Reservation
from tradebench.llm.cache import CacheMode, ResponseCache
from tradebench.llm.types import ChatResponse, ModelConfig, Usage
from tradebench.runs.ray.cluster import require_ray

log = logging.getLogger("tradebench.runs")


@dataclass(frozen=True)
class Holder:
    """Who holds a reservation: a model worker's pool slot and its process's id."""

    slot: int
    process: str


@dataclass
class _Held:
    """What one worker process holds in flight."""

    process: str
    tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0


class BudgetKeeper:
    """Actor body: the run's budget (serial calls, so reserve is atomic), and what each
    worker process holds in flight."""

    def __init__(self, config: BudgetConfig, state: BudgetState | None) -> None:
        """Resume from `state` (the run's saved spend) or start from zero."""
        self.budget = Budget(config, state)
        self.held: dict[int, _Held] = {}
        self.freed: list[tuple[int, int, int]] = []
        """(slot, calls, tokens) freed from each restarted worker process, in order."""

    def require_price(self, model: ModelConfig) -> None:
        """See `Budget.require_price` (records the price used in the run's state)."""
        self.budget.require_price(model)

    def reserve(
        self, model: ModelConfig, worst: Usage, holder: Holder | None = None
    ) -> Reservation:
        """See `Budget.reserve` (raises `BudgetExceeded` to the caller), held by `holder`.

        A new process in a slot frees what the slot's previous process still held first.
        """
        if holder is not None:
            self._adopt(holder)
        reservation = self.budget.reserve(model, worst)
        if holder is not None:
            tally = self.held[holder.slot]
            tally.tokens += reservation.tokens
            tally.cost_usd += reservation.cost_usd
            tally.calls += 1
        return reservation

    def settle(
        self,
        model: ModelConfig,
        held: Reservation,
        usage: Usage | None,
        holder: Holder | None = None,
    ) -> None:
        """See `Budget.settle`; a process already replaced in its slot is only charged."""
        if holder is not None:
            tally = self.held.get(holder.slot)
            if tally is None or tally.process != holder.process:
                self.budget.settle(model, Reservation(tokens=0, cost_usd=0.0), usage)
                return  # its hold was freed when its slot restarted
            tally.tokens -= held.tokens
            tally.cost_usd -= held.cost_usd
            tally.calls -= 1
        self.budget.settle(model, held, usage)

    def _adopt(self, holder: Holder) -> None:
        tally = self.held.get(holder.slot)
        if tally is not None and tally.process == holder.process:
            return
        if tally is not None:
            self._free(holder.slot, tally)
        self.held[holder.slot] = _Held(holder.process)

    def _free(self, slot: int, tally: _Held) -> None:
        if not tally.calls:
            return
        self.budget.release(Reservation(tokens=tally.tokens, cost_usd=tally.cost_usd))
        self.freed.append((slot, tally.calls, tally.tokens))
        log.warning(
            "model worker %d: freed %d reservation(s) (%d tokens) held by a process that ended",
            slot,
            tally.calls,
            tally.tokens,
        )

    def release_all(self) -> list[tuple[int, int, int]]:
        """At the end of a run, when no call is in flight any more: free what dead worker
        processes whose slot never reserved again still hold. Returns every (slot, calls,
        tokens) freed over the run."""
        for slot, tally in self.held.items():
            self._free(slot, tally)
        self.held = {}
        return list(self.freed)

    def in_flight(self) -> dict[int, tuple[int, int]]:
        """(calls, tokens) each worker slot's current process holds now."""
        return {slot: (h.calls, h.tokens) for slot, h in self.held.items()}

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

    def served_for(self, endpoint: str, model: str) -> str | None:
        """See `ResponseCache.served_for`."""
        return self.cache.served_for(endpoint, model)

    def remember_served(self, endpoint: str, model: str, served: str | None) -> None:
        """See `ResponseCache.remember_served`."""
        self.cache.remember_served(endpoint, model, served)

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

    def __init__(self, keeper: Any, config: BudgetConfig, holder: Holder | None = None) -> None:
        """Use the keeper actor `keeper`, whose caps and prices are `config`; reservations
        are held by `holder` (a model worker's slot and process)."""
        self.keeper = keeper
        self.config = config
        self.holder = holder

    def require_price(self, model: ModelConfig) -> None:
        """See `Budget.require_price`, checked locally from the same config (the driver has
        recorded each model's price at the keeper before any worker starts)."""
        Budget(self.config).require_price(model)

    async def reserve_async(self, model: ModelConfig, worst: Usage) -> Reservation:
        """Reserve at the keeper (raises `BudgetExceeded` when a cap could be crossed)."""
        return await call(self.keeper.reserve.remote(model, worst, self.holder))

    async def settle_async(
        self, model: ModelConfig, held: Reservation, usage: Usage | None
    ) -> None:
        """Settle at the keeper."""
        await call(self.keeper.settle.remote(model, held, usage, self.holder))


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

    async def served_async(self, endpoint: str, model: str) -> str | None:
        """What the endpoint answered for `model` (`ResponseCache.served_for`)."""
        return await call(self.keeper.served_for.remote(endpoint, model))

    async def remember_served_async(self, endpoint: str, model: str, served: str | None) -> None:
        """Record what the endpoint answers for `model` (the keeper applies the mode)."""
        await call(self.keeper.remember_served.remote(endpoint, model, served))


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

    def remote_budget(self, holder: Holder | None = None) -> RemoteBudget:
        """What workers charge (model workers as `holder`)."""
        return RemoteBudget(self.budget, self.config, holder)

    def remote_cache(self) -> RemoteCache | None:
        """What workers read and write replies through (None when the cache is off)."""
        if self.cache is None:
            return None
        return RemoteCache(self.cache, self.cache_path, self.cache_mode)

    def release_all(self) -> list[tuple[int, int, int]]:
        """See `BudgetKeeper.release_all` (called once every episode has ended)."""
        return require_ray().get(self.budget.release_all.remote())

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
