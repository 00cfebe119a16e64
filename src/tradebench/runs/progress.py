"""Live counters of a run for the progress display: episodes by state, steps, tokens.

Both executors move each episode through `queued -> running -> done` (the Ray executor adds
`retrying` when a worker died under an episode), so the display shows where the grid
stands across the whole cluster, counted on the driver.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

STATES = ("queued", "running", "retrying", "done")
"""Episode states in display order."""


@dataclass(frozen=True)
class Retry:
    """An episode resubmitted after its worker was lost."""

    episode_id: str
    from_step: int
    """Completed steps in the driver's journal when it was resubmitted (its checkpoint)."""
    reason: str


@dataclass
class RunProgress:
    """Live counters for the progress display."""

    episodes_total: int = 0
    episodes_done: int = 0
    steps_done: int = 0
    tokens: int = 0
    states: Counter[str] = field(default_factory=Counter)
    """Episodes of this invocation by state (finished ones found on resume count as done)."""
    retries: list[Retry] = field(default_factory=list)
    resumed: dict[str, int] = field(default_factory=dict)
    """Episodes that started from a checkpoint on a worker: id -> steps restored."""
    dataset_copies: int = 0
    """Times a worker node wrote the dataset to its local disk (Ray executor)."""
    freed_reservations: list[tuple[int, int, int]] = field(default_factory=list)
    """(worker slot, calls, tokens) the budget freed from dead worker processes (Ray)."""
    model_calls: int = 0
    """Model replies received by this invocation (cache hits included; local executor)."""
    model_seconds: float = 0.0
    """Their summed latency (a hit adds its recorded latency)."""
    limiter: str = ""
    """The endpoint limiters' state (`ModelPool.limiter_line`): requests in flight of
    those allowed, 429s met, any Retry-After pause (local executor)."""
    listeners: list[Callable[[RunProgress], None]] = field(default_factory=list)

    def bump(self, *, episodes: int = 0, steps: int = 0, tokens: int = 0) -> None:
        """Add to the counters and notify listeners; finished episodes also count as done."""
        self.episodes_done += episodes
        self.steps_done += steps
        self.tokens += tokens
        self.states["done"] += episodes
        self._notify()

    def called(self, latency_s: float, limiter: str | None = None) -> None:
        """Count one model reply that took `latency_s` seconds; `limiter` is the limiters'
        state after it (None: unchanged)."""
        if limiter is not None:
            self.limiter = limiter
        self.model_calls += 1
        self.model_seconds += latency_s
        self._notify()

    def move(self, episodes: int, old: str | None, new: str) -> None:
        """Move `episodes` from state `old` (None: newly planned) to `new`."""
        if old is not None:
            self.states[old] -= episodes
        self.states[new] += episodes
        self._notify()

    def finish(self, old: str, *, steps: int = 0, tokens: int = 0) -> None:
        """One episode left state `old` as done, with its last steps and tokens."""
        self.states[old] -= 1
        self.bump(episodes=1, steps=steps, tokens=tokens)

    def retried(self, retry: Retry) -> None:
        """Record a resubmission (the episode goes from running to retrying)."""
        self.retries.append(retry)
        self.move(1, "running", "retrying")

    def by_state(self) -> str:
        """`queued 3  running 4  done 10` for the display (empty states left out)."""
        return "  ".join(f"{s} {self.states[s]}" for s in STATES if self.states[s] > 0)

    def _notify(self) -> None:
        for listener in self.listeners:
            listener(self)
