"""A transient progress bar fed by a `(done, total)` callback, for the commands whose work
runs inside the library (`probe run`, `mcq eval`, `leaderboard`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tradebench.cli.kit import console

__all__ = ["counting_bar"]


@contextmanager
def counting_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A rich bar (description, bar, done/total, elapsed, time left) shown while the block
    runs; the block reports with the yielded `progress(done, total)`. It disappears at
    the end, leaving the command's own result lines. Output that is not a terminal (a
    pipe, a log file) gets no bar, only those lines."""
    if not console.is_terminal:
        yield lambda done, total: None
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
    task = bar.add_task(description, total=None)

    def progress(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield progress
