"""The run's one budget and one reply cache on a Ray cluster, each owned by one actor.

`BudgetKeeper` holds the run's `Budget` and lends it out in leases: a worker asks for a
block that covers at least its next call's worst case (up to `LEASE_CALLS` of them while
the caps leave room for every worker), reserves and settles its calls against the block
in its own process, and reports what the calls really used in batches (one per
`FLUSH_WINDOW_S`). Every lease comes out of the keeper's caps, so the caps hold across
the cluster exactly as in one process: a call is sent only when the worker's lease covers
its worst case, and the keeper lends only what spend plus every outstanding lease leaves
under the caps. Near a cap the leases shrink to one call, and a worker whose lease cannot
be renewed gives back what it holds as it is refused.

`CacheKeeper` owns the SQLite reply cache beside the run folder and is its only writer:
the first reply stored for a key is the one every later request gets, live or in
replay, exactly as with one process. A worker on the keeper's node reads the file itself
(SQLite's WAL lets readers run beside the writer); stores travel in batches too.
`RemoteBudget` and `RemoteCache` are what a worker's models are built with: they have the
awaited interface of `Budget` and `ResponseCache`.

A worker flushes its batches (spend reports, stored replies) before it sends a step to
the driver (`RemoteBudget.reported`, `RemoteCache.stored`), so every call of a step the
driver holds is charged and cached, and a run resumed from the driver's journal replays.

A worker that dies holds its lease forever unless someone frees it. Each model worker
leases as a `Holder`: its slot in the pool and an id drawn when the process starts. When
Ray restarts a slot's actor, the new process's first lease tells the keeper that the
slot's previous process is gone, and the keeper frees what that process still held; a
late report from it charges its usage and frees nothing twice. What the dead process
spent on calls of a step the driver never received is not charged (those calls are made
again), as for a call in flight when a worker dies.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from tradebench.llm.budget import Budget, BudgetConfig, BudgetState, Reservation
from tradebench.llm.cache import CacheMode, ResponseCache
from tradebench.llm.prices import Price
from tradebench.llm.types import ChatResponse, ModelConfig, Usage
from tradebench.runs.ray.cluster import require_ray

log = logging.getLogger("tradebench.runs")
LEASE_CALLS = 16
"""A lease covers up to this many worst cases of the call that asks for it."""
FLUSH_WINDOW_S = 0.2
"""How long a worker gathers spend reports and stores before it sends them as one batch
(a step reaches the driver at most this much later; the episode does not wait)."""
T = TypeVar("T")
Spend = tuple[ModelConfig, Usage]
"""One completed call's model and real usage, as a worker reports it."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lease: a model worker's pool slot (None outside the pool) and its
    process's id."""

    slot: int | None
    process: str


@dataclass
class _Held:
    """What one worker process holds: its leases not yet spent or given back."""

    slot: int | None
    process: str
    tokens: int = 0
    cost_usd: float = 0.0
    leases: int = 0
    """Leases granted since it last held nothing."""


class BudgetKeeper:
    """Actor body: the run's budget (serial calls, so a lease is atomic), and what each
    worker process holds."""

    def __init__(self, config: BudgetConfig, state: BudgetState | None) -> None:
        """Resume from `state` (the run's saved spend) or start from zero."""
        self.budget = Budget(config, state)
        self.held: dict[str, _Held] = {}
        """By process id."""
        self.slots: dict[int, str] = {}
        """Pool slot -> the process that last leased for it."""
        self.freed: list[tuple[int, int, int]] = []
        """(slot, leases, tokens) freed from each ended worker process, in order (slot -1:
        a holder outside the pool)."""

    def require_price(self, model: ModelConfig) -> None:
        """See `Budget.require_price` (records the price used in the run's state)."""
        self.budget.require_price(model)

    def price(self, model: ModelConfig) -> Price | None:
        """The price the keeper charges `model` at (a worker sizes its calls with it)."""
        return self.budget.quote(model).price

    def lease(
        self, holder: Holder, model: ModelConfig, worst: Usage, returned: Reservation
    ) -> Reservation:
        """Take back `returned` (the holder's unspent lease), then lend a block that
        covers `worst` at least: up to `LEASE_CALLS` of it, within a fair share of what
        the caps leave. A new process in a slot frees what the slot's previous process
        still held first.

        Raises:
            BudgetExceeded: Even one call of `worst` could cross a cap (nothing is lent;
                `returned` is taken back all the same).
        """
        tally = self._adopt(holder)
        self._take_back(tally, returned)
        first = self.budget.reserve(model, worst)
        extra = self._extra(first)
        self.budget.hold(extra)
        tally.tokens += first.tokens + extra.tokens
        tally.cost_usd += first.cost_usd + extra.cost_usd
        tally.leases += 1
        return Reservation(
            tokens=first.tokens + extra.tokens, cost_usd=first.cost_usd + extra.cost_usd
        )

    def report(self, holder: Holder, spent: Sequence[Spend]) -> None:
        """Charge completed calls' usage, out of the holder's lease; a process whose
        lease was freed (its slot restarted) is only charged."""
        tally = self.held.get(holder.process)
        for model, usage in spent:
            price = self.budget.quote(model).price
            used = Reservation(
                tokens=usage.total, cost_usd=price.request_cost(usage) if price else 0.0
            )
            self.budget.settle(model, used if tally else Reservation(tokens=0, cost_usd=0), usage)
            if tally is not None:
                tally.tokens -= used.tokens
                tally.cost_usd -= used.cost_usd

    def give_back(self, holder: Holder, returned: Reservation) -> None:
        """Take back an unspent lease (a worker that ends)."""
        tally = self.held.get(holder.process)
        if tally is not None:
            self._take_back(tally, returned)

    def _take_back(self, tally: _Held, returned: Reservation) -> None:
        self.budget.release(returned)
        tally.tokens -= returned.tokens
        tally.cost_usd -= returned.cost_usd
        if tally.tokens <= 0:
            tally.leases = 0

    def _extra(self, first: Reservation) -> Reservation:
        """What a lease lends beyond its first call: `LEASE_CALLS - 1` more of it, or a
        fair share of the headroom (half of it split between the holders), if less."""
        tokens, cost = self.budget.headroom()
        share = 2.0 * max(1, len(self.held))
        more = float(LEASE_CALLS - 1)
        if first.tokens > 0:
            more = min(more, tokens / (share * first.tokens))
        if first.cost_usd > 0:
            more = min(more, cost / (share * first.cost_usd))
        more = max(more, 0.0)
        return Reservation(tokens=int(more * first.tokens), cost_usd=more * first.cost_usd)

    def _adopt(self, holder: Holder) -> _Held:
        if holder.slot is not None:
            previous = self.slots.get(holder.slot)
            if previous is not None and previous != holder.process:
                ended = self.held.pop(previous, None)
                if ended is not None:
                    self._free(ended)
            self.slots[holder.slot] = holder.process
        tally = self.held.get(holder.process)
        if tally is None:
            tally = self.held[holder.process] = _Held(holder.slot, holder.process)
        return tally

    def _free(self, tally: _Held) -> None:
        if tally.tokens <= 0 and tally.cost_usd <= 0:
            return
        self.budget.release(Reservation(tokens=tally.tokens, cost_usd=tally.cost_usd))
        slot = -1 if tally.slot is None else tally.slot
        self.freed.append((slot, tally.leases, tally.tokens))
        log.warning(
            "model worker %d: freed %d lease(s) (%d tokens) held by a process that ended",
            slot,
            tally.leases,
            tally.tokens,
        )

    def release_all(self) -> list[tuple[int, int, int]]:
        """At the end of a run, when no call is in flight any more and the live workers
        have given their leases back: free what dead worker processes still hold.
        Returns every (slot, leases, tokens) freed over the run."""
        for tally in self.held.values():
            self._free(tally)
        self.held, self.slots = {}, {}
        return list(self.freed)

    def in_flight(self) -> dict[int, tuple[int, int]]:
        """(leases, tokens) the current process of each worker slot holds now."""
        return {
            slot: (self.held[p].leases, self.held[p].tokens)
            for slot, p in self.slots.items()
            if p in self.held
        }

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

    def put_many(self, rows: list[tuple[str, str, str, ChatResponse]]) -> None:
        """See `ResponseCache.put_many` (a worker's batch of stores)."""
        self.cache.put_many(rows)

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


class Batches(Generic[T]):
    """Items sent to a keeper in batches: one batch in flight at a time, each gathered for
    `FLUSH_WINDOW_S`; `flushed()` waits for the items added so far, not for a lull."""

    def __init__(self, send: Callable[[list[T]], Awaitable[None]]) -> None:
        """Send each batch with `send` (it returns once the keeper has applied it)."""
        self.send = send
        self.items: list[T] = []
        self.added = 0
        self.sent = 0
        self.error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._progress = asyncio.Condition()

    def add(self, item: T) -> None:
        """Queue `item` for the next batch."""
        self.items.append(item)
        self.added += 1
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while self.items:
                await asyncio.sleep(FLUSH_WINDOW_S)  # gather what comes meanwhile
                batch, self.items = self.items, []
                await self.send(batch)
                self.sent += len(batch)
                async with self._progress:
                    self._progress.notify_all()
        except BaseException as exc:  # raised to every waiter
            self.error = exc
            async with self._progress:
                self._progress.notify_all()
            raise

    async def flushed(self) -> None:
        """Return once every item added so far is applied (raise what a batch raised)."""
        target = self.added
        async with self._progress:
            await self._progress.wait_for(lambda: self.sent >= target or self.error is not None)
        if self.error is not None:
            raise self.error


class RemoteBudget:
    """A worker's lease of the `BudgetKeeper` (what `BudgetedModel` awaits): calls reserve
    and settle against the lease in this process; the keeper hears of a call only when
    the lease runs short and when its usage is reported (batched)."""

    def __init__(self, keeper: Any, config: BudgetConfig, holder: Holder | None = None) -> None:
        """Lease from the keeper actor `keeper`, whose caps and prices are `config`, as
        `holder` (a model worker's slot and process; None: this process outside the pool)."""
        self.keeper = keeper
        self.config = config
        self.holder = holder or Holder(None, uuid.uuid4().hex)
        self.tokens = 0
        """The lease's part not reserved by a call in flight."""
        self.cost_usd = 0.0
        self.reports: Batches[Spend] = Batches(self._report)
        self.prices: dict[str, Price | None] = {}
        self._renew = asyncio.Lock()

    def require_price(self, model: ModelConfig) -> None:
        """See `Budget.require_price`, checked locally from the same config (the driver has
        recorded each model's price at the keeper before any worker starts)."""
        Budget(self.config).require_price(model)

    async def _price(self, model: ModelConfig) -> Price | None:
        if model.label not in self.prices:
            self.prices[model.label] = await call(self.keeper.price.remote(model))
        return self.prices[model.label]

    async def reserve_async(self, model: ModelConfig, worst: Usage) -> Reservation:
        """Reserve out of the lease, renewing it at the keeper when it cannot cover
        `worst` (raises `BudgetExceeded` when even one such call could cross a cap)."""
        price = await self._price(model)
        need = Reservation(tokens=worst.total, cost_usd=price.request_cost(worst) if price else 0.0)
        async with self._renew:
            if need.tokens > self.tokens or need.cost_usd > self.cost_usd:
                returned = Reservation(tokens=self.tokens, cost_usd=self.cost_usd)
                self.tokens, self.cost_usd = 0, 0.0  # settles meanwhile add to zero
                lent = await call(self.keeper.lease.remote(self.holder, model, worst, returned))
                self.tokens += lent.tokens
                self.cost_usd += lent.cost_usd
            self.tokens -= need.tokens
            self.cost_usd -= need.cost_usd
        return need

    async def settle_async(
        self, model: ModelConfig, held: Reservation, usage: Usage | None
    ) -> None:
        """Put back what the call did not use; its usage goes to the keeper in the next
        report."""
        price = self.prices.get(model.label)
        used_tokens = usage.total if usage is not None else 0
        used_cost = price.request_cost(usage) if usage is not None and price else 0.0
        self.tokens += held.tokens - used_tokens
        self.cost_usd += held.cost_usd - used_cost
        if usage is None:
            return
        self.reports.add((model, usage))

    async def _report(self, batch: list[Spend]) -> None:
        await call(self.keeper.report.remote(self.holder, batch))

    async def reported(self) -> None:
        """Return once the usage of every call settled so far is charged at the keeper."""
        await self.reports.flushed()

    async def close(self) -> None:
        """Report what is left and give the unspent lease back (a worker that ends)."""
        await self.reported()
        returned = Reservation(tokens=self.tokens, cost_usd=self.cost_usd)
        self.tokens, self.cost_usd = 0, 0.0
        await call(self.keeper.give_back.remote(self.holder, returned))


class RemoteCache:
    """A worker's view of the `CacheKeeper` (what `CachedModel` awaits): on the keeper's
    node it reads the file itself, elsewhere it asks the keeper; stores go to the keeper
    in batches, one in flight at a time."""

    def __init__(self, keeper: Any, path: Path, mode: CacheMode, node: str | None = None) -> None:
        """Use the keeper actor `keeper`, which owns the file `path` in `mode` on the Ray
        node `node` (None: always ask the keeper)."""
        self.keeper = keeper
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.node = node
        self.pending: dict[str, tuple[str, str, ChatResponse]] = {}
        """Stores not yet committed by the keeper, by key (the first of a key wins)."""
        self._reader: ResponseCache | None = None
        self._here: bool | None = None
        self.stores: Batches[str] = Batches(self._store)

    def reader(self) -> ResponseCache | None:
        """This process's own connection to the file, when it is on the keeper's node."""
        if self._here is None:
            here = require_ray().get_runtime_context().get_node_id()
            self._here = self.node is not None and here == self.node and self.path.exists()
            if self._here:
                self._reader = ResponseCache(self.path, "replay")  # reads only
        return self._reader

    async def lookup(self, key: str) -> ChatResponse | None:
        """The cached reply for `key`, or None (a key this worker is storing is read once
        the keeper has it, so the reply is the file's)."""
        if key in self.pending:
            await self.stored()
        reader = self.reader()
        if reader is not None:
            return reader.get(key)
        return await call(self.keeper.get.remote(key))

    async def store(self, key: str, model: str, request: str, response: ChatResponse) -> None:
        """Queue a reply for the keeper (which stores it unless the key is present)."""
        if self.mode != "readwrite":
            return
        if key not in self.pending:
            self.pending[key] = (model, request, response)
            self.stores.add(key)

    async def _store(self, keys: list[str]) -> None:
        await call(self.keeper.put_many.remote([(k, *self.pending[k]) for k in keys]))
        for key in keys:
            del self.pending[key]

    async def stored(self) -> None:
        """Return once every reply queued so far is committed to the file."""
        await self.stores.flushed()

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
    node: str | None = None
    """The Ray node of the keepers (and of the cache file)."""

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
        node = ray.get_runtime_context().get_node_id()
        here = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node, soft=False)
        opts = {"num_cpus": 0, "scheduling_strategy": here, "max_restarts": 0}
        budget = ray.remote(BudgetKeeper).options(**opts).remote(config, state)
        cache = None
        if cache_mode != "off":
            ResponseCache(cache_path, cache_mode).close()  # fail here with a clear line
            cache = ray.remote(CacheKeeper).options(**opts).remote(str(cache_path), cache_mode)
        return cls(budget, cache, config, cache_path, cache_mode, node)

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
        return RemoteCache(self.cache, self.cache_path, self.cache_mode, self.node)

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
