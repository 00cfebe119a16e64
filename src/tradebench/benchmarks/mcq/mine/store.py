"""The mining database on disk: JSONL files that grow run after run, and per-attempt logs.

```
DB_DIR/db/mcq/accepted.jsonl       MinedQuestion, status accepted (solved only with tools)
DB_DIR/db/mcq/review.jsonl         MinedQuestion, status review (human-review queue)
DB_DIR/db/attempts/attempts.jsonl  AttemptRecord, every attempt of every run
DB_DIR/db/summary/summary.jsonl    MineSummary, one line per run
DB_DIR/runs/<run id>/r001-00.json  full log of one attempt (prompt, reply, code runs, solvers)
DB_DIR/cache.sqlite                response cache of both models
DB_DIR/budget.json                 spend charged to the budget so far
```

Run ids are `<UTC timestamp>-run<NNN>`: the clock names the log folder only; every line
of the JSONL files is a function of the database state, the cache and the spec.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tradebench.benchmarks.mcq.mine.types import AttemptRecord, MinedQuestion, MineSummary
from tradebench.errors import DataError
from tradebench.files import write_text_atomic
from tradebench.runs.records import BUDGET_FILE, CACHE_FILE

M = TypeVar("M", bound=BaseModel)


def _dumps(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))


class MineDB:
    """Paths and reads/appends of one mining database folder."""

    def __init__(self, root: Path) -> None:
        """Point at `root` (created on the first write)."""
        self.root = Path(root)
        self.accepted = self.root / "db" / "mcq" / "accepted.jsonl"
        self.review = self.root / "db" / "mcq" / "review.jsonl"
        self.attempts = self.root / "db" / "attempts" / "attempts.jsonl"
        self.summary = self.root / "db" / "summary" / "summary.jsonl"
        self.runs = self.root / "runs"
        self.cache = self.root / CACHE_FILE
        self.budget = self.root / BUDGET_FILE

    @staticmethod
    def read(path: Path, model: type[M]) -> list[M]:
        """Every record of a JSONL file ([] when absent); a bad line is a `DataError`."""
        if not path.exists():
            return []
        out = []
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append(model.model_validate_json(line))
            except ValidationError as exc:
                raise DataError(f"{path}:{no}: not a valid {model.__name__}: {exc}") from exc
        return out

    @staticmethod
    def append(path: Path, records: Iterable[BaseModel]) -> None:
        """Append records as JSON lines (UTF-8, '\\n')."""
        lines = [_dumps(r) + "\n" for r in records]
        if not lines:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8", newline="\n") as fh:
            fh.writelines(lines)

    def prior_attempts(self) -> list[AttemptRecord]:
        """Every attempt recorded so far, in order."""
        return self.read(self.attempts, AttemptRecord)

    def questions(self) -> list[MinedQuestion]:
        """Accepted and review-queue questions."""
        return self.read(self.accepted, MinedQuestion) + self.read(self.review, MinedQuestion)

    def next_run(self, attempts: list[AttemptRecord]) -> int:
        """The next run ordinal: one past any run seen in attempts or summaries."""
        runs = [a.run for a in attempts] + [s.run for s in self.read(self.summary, MineSummary)]
        return max(runs, default=0) + 1

    def unfinished_run(self, attempts: list[AttemptRecord]) -> int | None:
        """The last run that recorded attempts but no summary line (a stop mid-run)."""
        summarised = {s.run for s in self.read(self.summary, MineSummary)}
        runs = [a.run for a in attempts if a.run not in summarised]
        return max(runs) if runs else None

    def run_folder(self, run: int) -> str | None:
        """The log folder name of an earlier run, when it has one."""
        names = sorted(p.name for p in self.runs.glob(f"*-run{run:03d}") if p.is_dir())
        return names[-1] if names else None

    def seen(self, attempts: list[AttemptRecord]) -> set[str]:
        """Whole-question hashes (text, options, answer value) of every earlier attempt that
        got options, and of every stored question."""
        hashes = {a.content_sha256 for a in attempts if a.content_sha256}
        return hashes | {q.id for q in self.questions()}

    def write_log(self, run_id: str, name: str, payload: dict[str, Any]) -> Path:
        """Write one attempt's log as indented JSON under runs/<run_id>/."""
        path = self.runs / run_id / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return path
