"""Whole-or-nothing file writes: a temporary file beside the target, renamed into place.

A reader (a resumed run, a report, another episode of the run) never sees half a file, and
two writers of the same bytes (threads or processes) never collide on one temporary name.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

__all__ = ["fsync_dir", "write_bytes_atomic"]


def write_bytes_atomic(path: Path, data: bytes, durable: bool = False) -> Path:
    """Write `data` to `path` through a uniquely named temporary file and a rename.

    With `durable`, the file is fsynced before the rename and its folder after it, so the
    write also survives a power loss (the trace's compaction and expansion rely on it).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex}")
    with tmp.open("wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)
    return path


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so a rename or an unlink in it is on disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
