"""Per-endpoint limits: concurrent requests, requests per minute, tokens per minute.

One `RateLimiter` stands for one endpoint; pass the same instance to every model that
shares that endpoint. Minute limits use a sliding 60-second window; the token charge of a
request is estimated before it is sent (prompt characters / 4 + `max_tokens`) and settled
with the real usage afterwards.
"""

from __future__ import annotations

import asyncio
import collections
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


class _Charge:
    """A token charge in the window; `settle` corrects the estimate with real usage."""

    def __init__(self, entry: list[float]) -> None:
        self._entry = entry

    def settle(self, tokens: int) -> None:
        """Replace the estimated token count with the real one."""
        self._entry[1] = float(tokens)


class RateLimiter:
    """Enforces `Limits` for the requests of one event loop."""

    def __init__(self, limits: Limits) -> None:
        """Start with empty windows; asyncio primitives are made on first use."""
        self.limits = limits
        self._requests: collections.deque[float] = collections.deque()
        self._tokens: collections.deque[list[float]] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None
        self._gate: asyncio.Lock | None = None

    def _bind(self) -> tuple[asyncio.Semaphore | None, asyncio.Lock]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._gate is None:
            self._loop = loop
            n = self.limits.max_concurrency
            self._sem = asyncio.Semaphore(n) if n else None
            self._gate = asyncio.Lock()
        return self._sem, self._gate

    def _wait_needed(self, now: float, estimate: int) -> float:
        """Seconds until a request with `estimate` tokens fits both windows (0 = now)."""
        window = self.limits.window_s
        while self._requests and self._requests[0] <= now - window:
            self._requests.popleft()
        while self._tokens and self._tokens[0][0] <= now - window:
            self._tokens.popleft()
        wait = 0.0
        rpm = self.limits.requests_per_minute
        if rpm is not None and len(self._requests) >= rpm:
            wait = max(wait, self._requests[0] + window - now)
        tpm = self.limits.tokens_per_minute
        if tpm is not None and self._tokens:
            used = sum(t for _, t in self._tokens)
            if used + estimate > tpm:
                wait = max(wait, self._tokens[0][0] + window - now)
        return wait

    async def _admit(self, estimate: int) -> _Charge:
        if self.limits.requests_per_minute is None and self.limits.tokens_per_minute is None:
            return _Charge([0.0, 0.0])  # no minute windows to keep
        _, gate = self._bind()
        loop = asyncio.get_running_loop()
        async with gate:
            while (wait := self._wait_needed(loop.time(), estimate)) > 0:
                await asyncio.sleep(wait + 0.001)
            now = loop.time()
            self._requests.append(now)
            entry = [now, float(estimate)]
            self._tokens.append(entry)
            return _Charge(entry)

    @asynccontextmanager
    async def slot(self, estimate: int) -> AsyncIterator[_Charge]:
        """Hold one request slot; waits for concurrency and the minute windows."""
        sem, _ = self._bind()
        if sem is None:
            yield await self._admit(estimate)
            return
        async with sem:
            yield await self._admit(estimate)
