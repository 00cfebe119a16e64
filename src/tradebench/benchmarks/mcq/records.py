"""The stored question record (versioned pydantic model) and its JSONL reading and writing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tradebench.benchmarks.mcq.config import BacktestConfig, StrategyName
from tradebench.errors import ConfigError, DataError
from tradebench.files import write_text_atomic

Letter = Literal["A", "B", "C", "D"]
SCHEMA_VERSION = 2
"""Record layout version. 2 added `alternative` (the comparative templates' second backtest)
and changed the definitions of `max_shares`, `golden_cross_count`, `sma_comparison` and
`signal_diff`; version-1 files still read, and the checker re-derives them by the old
definitions (`check/derive_legacy.py`)."""


class MCQRecord(BaseModel):
    """One multiple-choice question, self-contained: the checker needs nothing else."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = Field(default=SCHEMA_VERSION, ge=1, description="Record layout version.")
    id: str = Field(description="SHA-256 of the normalised question text and the options.")
    question: str = Field(description="Configuration preamble followed by the question.")
    options: dict[Letter, str] = Field(description="Option texts A-D in display order.")
    answer: Letter = Field(description="The correct letter.")
    template: str = Field(description="Template name (see docs/mcq.md for its definition).")
    tier: Literal["easy", "medium", "hard"] = Field(description="Difficulty tier.")
    strategy: StrategyName = Field(description="Strategy the backtest ran.")
    answer_kind: Literal["number", "integer", "date", "choice", "composite"] = Field(
        description="How the options are compared: number, integer, date, choice, or "
        "composite (each option read back into the parts of `params['form']`, typed by "
        "`params['kinds']`, every part compared by its kind)."
    )
    params: dict[str, Any] = Field(description="Template parameters (date, k, n, a, b).")
    config: BacktestConfig = Field(description="The full backtest configuration.")
    alternative: BacktestConfig | None = Field(
        default=None,
        description="Comparative templates: the second backtest, identical to `config` except "
        "for the strategy parameters; None otherwise.",
    )
    seed: int = Field(description="Build seed that produced this question.")


def _normalise(text: str) -> str:
    return " ".join(text.split())


def question_id(question: str, options: dict[str, str]) -> str:
    """SHA-256 of the whitespace-normalised question and its options in letter order."""
    parts = [_normalise(question), *(f"{k}) {_normalise(options[k])}" for k in sorted(options))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def dumps_record(record: MCQRecord) -> str:
    """One JSON line with fixed key order (field order) and no platform-dependent spacing."""
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))


def write_jsonl(records: Iterable[MCQRecord], path: Path) -> None:
    """Write records as JSONL (UTF-8, '\\n' line ends) in the given order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(dumps_record(record) + "\n" for record in records))


def read_jsonl(path: Path) -> list[MCQRecord]:
    """Read and validate records; a malformed line raises `DataError` with its number, and
    so do a file that is not UTF-8 text and one that holds no question."""
    if not path.exists():
        raise DataError(f"question file {path} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"question file {path} is not UTF-8 text (byte {exc.start}); pass the JSONL "
            "file `tradebench mcq build` wrote"
        ) from None
    records = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(MCQRecord.model_validate_json(line))
        except ValidationError as exc:
            raise DataError(f"{path}:{no}: not a valid MCQ record: {exc.errors()[0]}") from exc
        except ConfigError as exc:
            raise DataError(f"{path}:{no}: not a valid MCQ record: {exc}") from exc
    if not records:
        raise DataError(
            f"question file {path} holds no questions; pass the JSONL file "
            "`tradebench mcq build` wrote"
        )
    return records
