"""Crash-safe per-step progress of a single-stock episode (one JSON line per decision).

After each decision the executor appends the step's trace to `trace.jsonl`, then the
decision record to `progress.jsonl` (both flushed and fsynced). A rerun reads the complete
lines back (a torn last line is dropped), trims the trace to match, and replays the
decisions into a fresh episode, so a killed run ends with the same files as an
uninterrupted one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tradebench.benchmarks.single_stock.agents import StepDecision

PROGRESS = "progress.jsonl"
TRACE = "trace.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    if not path.exists():
        return out
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(raw))
        except json.JSONDecodeError:
            break  # a torn last line from a kill mid-write
    return out


class StepLog:
    """Append-only decision and trace files of one episode folder."""

    def __init__(self, folder: Path) -> None:
        """Use (and create) `folder`."""
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def restore(self) -> list[StepDecision]:
        """The decisions already taken, in order; files are trimmed to match them."""
        lines = _lines(self.folder / PROGRESS)
        decisions = [StepDecision(**line["decision"]) for line in lines]
        self._rewrite(PROGRESS, lines)
        kept = [t for t in _lines(self.folder / TRACE) if t.get("step", len(lines)) < len(lines)]
        self._rewrite(TRACE, kept)
        return decisions

    def append(self, index: int, decision: StepDecision) -> None:
        """Persist one decision (trace first, then the progress line)."""
        if decision.trace is not None:
            self._append(TRACE, {"step": index, **decision.trace})
        self._append(PROGRESS, {"step": index, "decision": decision.record()})

    def _append(self, name: str, payload: dict[str, Any]) -> None:
        with (self.folder / name).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(payload, ensure_ascii=False, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def _rewrite(self, name: str, lines: list[dict[str, Any]]) -> None:
        path = self.folder / name
        text = "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
