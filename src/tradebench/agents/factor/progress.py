"""Training progress of one model: `report(done, total)` steps, for a bar with an ETA.

A step is a boosting round, a sub-model stage or an epoch of one seed; `total` is the
most steps the training can take (early stopping may end it sooner, then the last call
reports `done == total`).
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]
"""Called with (steps done, steps at most) while a model trains."""

__all__ = ["Progress", "no_progress"]


def no_progress(done: int, total: int) -> None:
    """The default: report nothing."""
