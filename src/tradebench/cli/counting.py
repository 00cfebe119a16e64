"""Transient progress bars fed by callbacks, for the commands whose work runs inside the
library: `(done, total)` (`probe run`, `mcq eval`, `leaderboard`) or `(phase, done,
total)` (`data import`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tradebench.cli.kit import console

__all__ = ["counting_bar", "phase_bar"]


@contextmanager
def counting_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A rich bar (description, bar, done/total, elapsed, time left) shown while the block
    runs; the block reports with the yielded `progress(done, total)`. It disappears at
    the end, leaving the command's own result lines. Output that is not a terminal (a
    pipe, a log file) gets no bar, only those lines."""
    with phase_bar(description) as phases:
        yield lambda done, total: phases(description, done, total)


@contextmanager
def phase_bar(first: str = "starting") -> Iterator[Callable[[str, int, int], None]]:
    """`counting_bar` for work in phases: the block reports with the yielded
    `progress(phase, done, total)`, and the bar shows the current phase with its own done
    and total (rows, symbols, tables) and time since the phase began. No bar where the
    output is not a terminal."""
    if not console.is_terminal:
        yield lambda phase, done, total: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = bar.add_task(first, total=None)
    current = [first]

    def progress(phase: str, done: int, total: int) -> None:
        # a new phase and a finished count are drawn at once (not at the next timed refresh),
        # so every phase shows, however quickly it passes on a busy machine
        if phase != current[0]:  # a new phase: its own count, speed and clock
            current[0] = phase
            bar.reset(task, description=phase, completed=done, total=total)
            bar.refresh()
        else:
            bar.update(task, completed=done, total=total, refresh=done == total)

    with bar:
        yield progress
