"""Build a run-level file once, whoever asks first: pools, captures, the compiled mandate.

Episodes of a run may run at once in several processes and, for models, as several tasks
of one event loop. `build_once` takes an exclusive lock beside the file (polled without
blocking, so tasks of one loop never wait on each other's lock while holding the loop),
re-checks, builds and writes the file whole; everyone else reads the same bytes.
"""

from __future__ import annotations

import asyncio
import fcntl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from tradebench.files import write_bytes_atomic

POLL_S = 0.05


@asynccontextmanager
async def file_lock(path: Path) -> AsyncIterator[None]:
    """Hold an exclusive `flock` on `path` (created), polling while another holder has it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(POLL_S)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


async def build_once(path: Path, build: Callable[[], Awaitable[bytes]]) -> bytes:
    """The bytes of `path`, built by `build()` and written whole if it does not exist yet."""
    path = Path(path)
    if not path.exists():
        async with file_lock(path.with_name(f".{path.name}.lock")):
            if not path.exists():
                write_bytes_atomic(path, await build())
    return path.read_bytes()
