"""Whole-or-nothing file writes: a temporary file beside the target, renamed into place.

A reader (a resumed run, a report, another episode of the run) never sees half a file, and
two writers of the same bytes (threads or processes) never collide on one temporary name. A
write that fails (a full disk) leaves the old file as it was and no temporary file behind.
Files the harness rewrites and reads back are read with `read_model`: a damaged one is one
clear error naming the file and the fix, never a validation traceback.
"""

from __future__ import annotations

import io
import os
import threading
import uuid
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tradebench.errors import DataError

__all__ = [
    "fsync_dir",
    "read_model",
    "write_bytes_atomic",
    "write_parquet_atomic",
    "write_text_atomic",
]

M = TypeVar("M", bound=BaseModel)


def write_bytes_atomic(path: Path, data: bytes, durable: bool = False) -> Path:
    """Write `data` to `path` through a uniquely named temporary file and a rename.

    With `durable`, the file is fsynced before the rename and its folder after it, so the
    write also survives a power loss (the trace's compaction and expansion rely on it).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex}")
    try:
        with tmp.open("wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)
    return path


def write_text_atomic(path: Path, text: str, durable: bool = True) -> Path:
    """Write UTF-8 `text` to `path` whole or not at all (fsynced by default: the files the
    harness rewrites in place, such as `budget.json` and `spec.yaml`, must survive a crash)."""
    return write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_parquet_atomic(frame: Any, path: Path, durable: bool = True, **kwargs: Any) -> Path:
    """Write a DataFrame (`frame.to_parquet(..., **kwargs)`) to `path` whole or not at all."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, **kwargs)
    return write_bytes_atomic(path, buffer.getvalue(), durable=durable)


def read_model(path: Path, model: type[M], what: str, fix: str) -> M:
    """The pydantic `model` stored as JSON at `path`.

    Raises:
        DataError: The file is unreadable, empty, not JSON or not a `what`; the message names
            the file, what it should hold and `fix`.
    """
    try:
        raw = Path(path).read_bytes()
        if not raw.strip():
            raise ValueError("the file is empty")
        return model.model_validate_json(raw)
    except (OSError, ValueError) as exc:
        reason = (
            f"{exc.error_count()} field error(s), first: {exc.errors()[0]['msg']}"
            if isinstance(exc, ValidationError)
            else " ".join(str(exc).split())
        )
        raise DataError(f"{path} is not a readable {what} ({reason}); {fix}") from None


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so a rename or an unlink in it is on disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
