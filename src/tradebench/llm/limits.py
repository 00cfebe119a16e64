"""Per-endpoint limits: concurrent requests, requests per minute, tokens per minute.

One `RateLimiter` stands for one endpoint; pass the same instance to every model that
shares that endpoint. Minute limits use a sliding 60-second window; the token charge of a
request is estimated before it is sent (prompt characters / 4 + `max_tokens`) and settled
with the real usage afterwards. A request holds its place in the window from when it is
sent until a window after its reply came back: the server saw it at some moment in
between, so the server's own window never sees more than the limit, however the requests'
transit times vary (a fresh connection's first request arrives late).

Concurrency adapts to the endpoint (additive increase, multiplicative decrease, as
inspect_ai's adaptive connections do): an HTTP 429 halves the requests allowed in flight
(once per round: only a request started after the last cut cuts again), and every
`limit` replies in a row that come back without one raise it by one, up to
`max_concurrency`. A 429's Retry-After holds every new request of the endpoint until it
has passed, not only the one refused.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pydantic import BaseModel, ConfigDict, Field

WINDOW_S = 60.0


class Limits(BaseModel):
    """Limits for one endpoint; None means unlimited."""

    model_config = ConfigDict(frozen=True)

    max_concurrency: int | None = Field(default=None, ge=1)
    """Requests in flight at once."""
    requests_per_minute: int | None = Field(default=None, ge=1)
    """Requests started in any 60-second window."""
    tokens_per_minute: int | None = Field(default=None, ge=1)
    """Tokens (input + output) charged in any 60-second window."""
    window_s: float = Field(default=WINDOW_S, gt=0)
    """Length of the "minute" window in seconds (shorten only for tests)."""


class MinuteLimits(BaseModel):
    """A model's rate limits as a spec or the command line states them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rpm: int | None = Field(default=None, ge=1)
    """Requests per minute (None: unlimited)."""
    tpm: int | None = Field(default=None, ge=1)
    """Tokens (input + output) per minute (None: unlimited)."""

    def limits(self) -> Limits:
        """These limits as a `Limits` for a `RateLimiter`."""
        return Limits(requests_per_minute=self.rpm, tokens_per_minute=self.tpm)


class LimiterState(BaseModel):
    """What a limiter is doing, for a progress display."""

    model_config = ConfigDict(frozen=True)

    concurrency: int | None
    """Requests allowed in flight now (None: no bound)."""
    in_flight: int
    """Requests in flight."""
    throttled: int
    """HTTP 429 answers met so far."""
    paused_s: float
    """Seconds every new request still waits for a Retry-After (0: none pending)."""
    lowest: int | None = None
    """The lowest concurrency a 429 cut it to (None: never cut)."""

    def describe(self) -> str:
        """A short line: `in flight 3/4, 429s 2, paused 1.5 s`."""
        bound = "" if self.concurrency is None else f"/{self.concurrency}"
        text = f"in flight {self.in_flight}{bound}, 429s {self.throttled}"
        return text + (f", paused {self.paused_s:.1f} s" if self.paused_s > 0 else "")


class _Charge:
    """A request's place in the window: [ended at (inf while in flight), tokens];
    `settle` corrects the estimated tokens with real usage."""

    def __init__(self, entry: list[float]) -> None:
        self._entry = entry

    def settle(self, tokens: int) -> None:
        """Replace the estimated token count with the real one."""
        self._entry[1] = float(tokens)

    def end(self, at: float) -> None:
        """The request is over (reply, error or cancel): its window runs from `at`."""
        self._entry[0] = at


class RateLimiter:
    """Enforces `Limits` for the requests of one event loop, adapting to 429s."""

    def __init__(self, limits: Limits) -> None:
        """Start with empty windows; asyncio primitives are made on first use."""
        self.limits = limits
        self._window: list[list[float]] = []
        """Requests in the window: [ended at (inf while in flight), tokens]."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._room: asyncio.Condition | None = None
        self._gate: asyncio.Lock | None = None
        self.concurrency: int | None = limits.max_concurrency
        """Requests allowed in flight now (None: unbounded until the first 429)."""
        self.in_flight = 0
        self.throttles = 0
        """HTTP 429 answers reported (`throttled()`)."""
        self.lowest: int | None = None
        """The lowest concurrency a 429 cut it to (None: never cut)."""
        self._since_cut = 0
        self._last_cut = float("-inf")
        self._paused_until = 0.0

    def _bind(self) -> tuple[asyncio.Condition, asyncio.Lock]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._gate is None or self._room is None:
            self._loop = loop
            self._room = asyncio.Condition()
            self._gate = asyncio.Lock()
            self.in_flight = 0
        return self._room, self._gate

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _wait_needed(self, now: float, estimate: int) -> float:
        """Seconds until a request with `estimate` tokens fits both windows and any
        Retry-After has passed (0 = now)."""
        window = self.limits.window_s
        self._window = [e for e in self._window if e[0] > now - window]
        wait = max(self._paused_until - now, 0.0)
        rpm = self.limits.requests_per_minute
        tpm = self.limits.tokens_per_minute
        full = rpm is not None and len(self._window) >= rpm
        if tpm is not None and self._window:
            full = full or sum(t for _, t in self._window) + estimate > tpm
        if full:
            first = min(e[0] for e in self._window)
            poll = min(window / 100, 0.05)  # all in flight: look again soon
            wait = max(wait, first + window - now if first != math.inf else poll)
        return wait

    async def _admit(self, estimate: int) -> _Charge:
        _, gate = self._bind()
        async with gate:
            while (wait := self._wait_needed(self._now(), estimate)) > 0:
                await asyncio.sleep(wait + 0.001)
            entry = [math.inf, float(estimate)]
            if self.limits.requests_per_minute or self.limits.tokens_per_minute:
                self._window.append(entry)
            return _Charge(entry)

    @asynccontextmanager
    async def slot(self, estimate: int) -> AsyncIterator[_Charge]:
        """Hold one request slot; waits for the concurrency bound, any Retry-After and the
        minute windows."""
        room, _ = self._bind()
        async with room:
            await room.wait_for(
                lambda: self.concurrency is None or self.in_flight < self.concurrency
            )
            self.in_flight += 1
        charge: _Charge | None = None
        try:
            charge = await self._admit(estimate)
            yield charge
        finally:
            if charge is not None:
                charge.end(self._now())
            async with room:
                self.in_flight -= 1
                room.notify_all()

    def started(self) -> float:
        """The loop time now: pass it to `throttled` for a request sent now."""
        return self._now()

    def throttled(self, retry_after: float | None, started_at: float) -> None:
        """An HTTP 429 for a request sent at `started_at`: halve the concurrency (once a
        round) and hold new requests for `retry_after` seconds."""
        self.throttles += 1
        now = self._now()
        if retry_after is not None and retry_after > 0:
            self._paused_until = max(self._paused_until, now + retry_after)
        if started_at < self._last_cut:
            return  # sent before the last cut: that cut already answered this round
        current = self.concurrency if self.concurrency is not None else max(self.in_flight, 1)
        self.concurrency = max(1, current // 2)
        self.lowest = min(self.lowest or self.concurrency, self.concurrency)
        self._last_cut = now
        self._since_cut = 0

    def succeeded(self) -> None:
        """A reply without a 429: after `concurrency` of them in a row, allow one more in
        flight (never above `max_concurrency`)."""
        if self.concurrency is None:
            return
        self._since_cut += 1
        if self._since_cut < self.concurrency:
            return
        self._since_cut = 0
        ceiling = self.limits.max_concurrency
        if ceiling is not None and self.concurrency >= ceiling:
            return
        self.concurrency += 1  # waiters see it when this request's slot is released

    def state(self) -> LimiterState:
        """The limiter's state now."""
        paused = 0.0
        try:
            clock: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # read outside the loop: the loop it last ran on
            clock = self._loop
        if clock is not None and self._paused_until:
            paused = max(self._paused_until - clock.time(), 0.0)
        return LimiterState(
            concurrency=self.concurrency,
            in_flight=self.in_flight,
            throttled=self.throttles,
            paused_s=paused,
            lowest=self.lowest,
        )
