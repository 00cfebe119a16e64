"""An episode's masked trace on disk: a live JSONL journal, then one zstd file when done.

While an episode runs, `Journal` appends one JSON line per step to `trace.jsonl` (resume
after kill -9 stays exact). When the harness marks the episode done it calls
`compact_trace`, which writes the same bytes as one zstd frame to `trace.jsonl.zst`,
checks that they decompress to exactly those bytes, and only then removes the JSONL. A
548-step model episode's trace shrinks from ~7 MB to under 1 MB (docs/runs.md).

Readers take either form (folders written before compaction keep `trace.jsonl`):
`trace_lines(folder)` here, `zstd -dc trace.jsonl.zst` in a shell, or in Python
`pyarrow.input_stream("trace.jsonl.zst").read()` (the `.zst` suffix selects zstd).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from tradebench.errors import DataError
from tradebench.files import fsync_dir, write_bytes_atomic
from tradebench.runs.records import TRACE_FILE, TRACE_ZST_FILE

ZSTD_LEVEL = 9
"""zstd level of a compacted trace: repeated prompts across steps compress ~10-20x at it,
and it writes tens of MB per second, negligible beside an episode's model calls."""


def trace_bytes(folder: Path) -> bytes | None:
    """The trace's JSONL bytes from `trace.jsonl` (the live journal, preferred) or from
    `trace.jsonl.zst`; None when the episode has neither (a rule agent).

    Raises:
        DataError: the compressed file is not readable zstd.
    """
    plain, packed = Path(folder) / TRACE_FILE, Path(folder) / TRACE_ZST_FILE
    if plain.exists():
        return plain.read_bytes()
    if not packed.exists():
        return None
    try:
        with pa.input_stream(str(packed), compression="zstd") as stream:
            return stream.read()
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"{packed} is not readable zstd ({exc}); rerun the episode") from None


def trace_lines(folder: Path) -> list[dict[str, Any]] | None:
    """The trace as one dict per step, in file order; None without a trace.

    Raises:
        DataError: a line is not a JSON object (the file and line are named).
    """
    data = trace_bytes(folder)
    if data is None:
        return None
    name = TRACE_FILE if (Path(folder) / TRACE_FILE).exists() else TRACE_ZST_FILE
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(data.decode("utf-8").splitlines(), start=1):
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{Path(folder) / name} line {number} is not JSON ({exc}); rerun the episode"
            ) from None
        if not isinstance(line, dict):
            raise DataError(
                f"{Path(folder) / name} line {number} is not a JSON object; rerun the episode"
            )
        lines.append(line)
    return lines


def compact_trace(folder: Path, level: int = ZSTD_LEVEL) -> Path | None:
    """Replace a finished episode's `trace.jsonl` by `trace.jsonl.zst` holding the same bytes.

    Written to a temporary file, verified by decompressing it, fsynced and renamed before
    the JSONL is removed, so a kill at any point leaves a complete trace in one form or
    both (`Journal.restore` keeps the JSONL then). Returns the compressed path, or None
    when there is no JSONL to compact.
    """
    folder = Path(folder)
    plain, packed = folder / TRACE_FILE, folder / TRACE_ZST_FILE
    if not plain.exists():
        return packed if packed.exists() else None
    data = plain.read_bytes()
    codec = pa.Codec("zstd", compression_level=level)
    frame = codec.compress(data, asbytes=True)
    if codec.decompress(frame, decompressed_size=len(data), asbytes=True) != data:
        raise DataError(f"compressing {plain} did not round-trip; the JSONL is kept")
    write_bytes_atomic(packed, frame, durable=True)
    plain.unlink()
    fsync_dir(folder)
    return packed


def expand_trace(folder: Path) -> None:
    """Make `trace.jsonl` the one trace file again, for an episode that is resumed.

    With both files (a kill during compaction) the JSONL is the journal and the
    compressed copy is dropped; with only `trace.jsonl.zst` its bytes become the JSONL.
    """
    folder = Path(folder)
    plain, packed = folder / TRACE_FILE, folder / TRACE_ZST_FILE
    if not packed.exists():
        return
    if not plain.exists():
        write_bytes_atomic(plain, trace_bytes(folder) or b"", durable=True)
    packed.unlink()
    fsync_dir(folder)
