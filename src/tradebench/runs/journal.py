"""The one crash-safe journal of an episode: one JSON line per completed step.

After every step the episode appends the step's masked trace to `trace.jsonl`, then its
progress line to `progress.jsonl`, each written through to the operating system (not
fsynced: a killed process loses nothing the kernel holds, and the two fsyncs of a step
held the run's one event loop about a millisecond, a fifth of its calls at full load). A
rerun reads the complete lines back (a torn last line from a kill mid-write is dropped),
keeps the steps both files hold (a power loss may keep the newer lines of one file and
not the other's: a progress line says whether its step wrote a trace), and continues after
the last one, so a killed run ends with the same files as an uninterrupted one. A done
episode's trace is compacted to `trace.jsonl.zst` (`runs.trace`); a resumed one gets its
JSONL back first. What a line holds is the
benchmark's business: the broker engine stores its rows and the account, the single-stock
benchmark its decision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tradebench.files import write_text_atomic
from tradebench.runs.records import PROGRESS_FILE, TRACE_FILE, TRACE_ZST_FILE
from tradebench.runs.trace import expand_trace

TRACED = "traced"
"""Key of a progress line whose step wrote a trace line first (absent otherwise, and in
folders written before it existed, whose steps are then taken as complete)."""


def _dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True) + "\n"


def _complete_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a file up to the first one that does not parse."""
    out: list[dict[str, Any]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(raw))
        except json.JSONDecodeError:
            break  # a torn last line from a kill mid-write
    return out


class Journal:
    """Append-only progress and trace files of one episode folder."""

    def __init__(self, folder: Path) -> None:
        """Use (and create) `folder`."""
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    @property
    def progress_path(self) -> Path:
        """`progress.jsonl` of the folder."""
        return self.folder / PROGRESS_FILE

    @property
    def trace_path(self) -> Path:
        """`trace.jsonl` of the folder."""
        return self.folder / TRACE_FILE

    def restore(self) -> list[dict[str, Any]]:
        """The completed steps' lines, in order; both files are trimmed to match them.

        With no progress file the episode starts afresh and any trace is removed. A trace
        already compacted to `trace.jsonl.zst` is expanded back to the JSONL first.
        """
        if not self.progress_path.exists():
            self.trace_path.unlink(missing_ok=True)
            (self.folder / TRACE_ZST_FILE).unlink(missing_ok=True)
            return []
        expand_trace(self.folder)
        lines = _complete_lines(self.progress_path)
        traces = _complete_lines(self.trace_path) if self.trace_path.exists() else []
        held = {t.get("step") for t in traces}
        # a step whose trace line was lost (not yet on disk at a power loss) is redone
        lost = next((i for i, x in enumerate(lines) if x.get(TRACED) and i not in held), None)
        lines = lines if lost is None else lines[:lost]
        if self.trace_path.exists():
            n = len(lines)
            self._rewrite(self.trace_path, [t for t in traces if t.get("step", n) < n])
        self._rewrite(self.progress_path, lines)
        return lines

    def append(self, index: int, line: dict[str, Any], trace: dict[str, Any] | None) -> None:
        """Persist step `index` (0-based): the trace first, then the progress line, which
        then says so (`TRACED`), so `restore` knows which steps must have a trace line."""
        if trace is not None:
            self._append(self.trace_path, {"step": index, **trace})
            line = {**line, TRACED: True}
        self._append(self.progress_path, line)

    @staticmethod
    def _append(path: Path, payload: dict[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(_dumps(payload))

    @staticmethod
    def _rewrite(path: Path, lines: list[dict[str, Any]]) -> None:
        write_text_atomic(path, "".join(_dumps(x) for x in lines))


def completed_steps(folder: Path) -> int:
    """How many steps an episode folder's journal holds complete (read only, nothing
    trimmed); 0 without a progress file."""
    path = Path(folder) / PROGRESS_FILE
    return len(_complete_lines(path)) if path.exists() else 0
