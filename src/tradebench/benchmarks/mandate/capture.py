"""Frozen analyst outputs: one content-hashed capture per pool and decision day.

A capture holds every analyst's signals for the pool before one open, as canonical JSON
(sorted keys, compact, UTF-8). It is written once under the run folder,
`captures/<pool id>/<YYYY-MM-DD>.json`, and every constructor of the run reads those bytes
back, so constructors differ only in what they do with the same evidence. The capture's
`sha256` is the hash of the file's bytes; each step records the hash it read.

Cited record ids are checked against the view: an id that is not visible at the decision
instant is a *violation*, kept in the capture and counted in the report.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.mandate.analysts import Signal
from tradebench.benchmarks.mandate.once import build_once
from tradebench.benchmarks.mandate.sources import AnalystCall, AnalystSource
from tradebench.view import MarketView

CAPTURE_VERSION = 1
CAPTURES_DIR = "captures"


class Violation(BaseModel):
    """A cited record id that was not visible at the decision instant."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    analyst: str
    symbol: str
    record_id: str


class Capture(BaseModel):
    """The analysts' signals for one pool before one open."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = CAPTURE_VERSION
    """Version of this record."""
    date: str
    """Decision day T (YYYY-MM-DD)."""
    decision_time: str
    """The decision instant in UTC (ISO): records visible up to here."""
    pool: list[str]
    """The pool's names, in pool order."""
    analysts: list[str]
    """Analyst roles, in the order their signals appear."""
    signals: list[Signal]
    """One signal per analyst and name."""
    violations: list[Violation]
    """Cited ids not visible at the decision instant."""
    analyst_calls: list[AnalystCall] = []
    """Model analysts' calls behind the signals (tokens, retries, fallback); empty for
    rule analysts."""


def canonical_bytes(capture: Capture) -> bytes:
    """The capture as canonical JSON bytes (what is written and hashed)."""
    payload = capture.model_dump(mode="json")
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def check_citations(view: MarketView, signals: Sequence[Signal]) -> list[Violation]:
    """Every cited id that `view` does not show at its decision instant."""
    out = []
    for sig in signals:
        for rid in sig.cited:
            try:
                view.record(rid)
            except KeyError:
                out.append(Violation(analyst=sig.analyst, symbol=sig.symbol, record_id=rid))
    return out


async def build_capture(
    view: MarketView, pool: Sequence[str], sources: Sequence[AnalystSource]
) -> Capture:
    """Run each analyst on the pool through `view` and check their citations."""
    signals: list[Signal] = []
    calls: list[AnalystCall] = []
    for source in sources:
        out = await source.signals(view, pool)
        signals += out.signals
        calls += out.calls
    return Capture(
        date=str(view.as_of),
        decision_time=view.decision_time.isoformat(),
        pool=list(pool),
        analysts=[s.label for s in sources],
        signals=signals,
        violations=check_citations(view, signals),
        analyst_calls=calls,
    )


@dataclass(frozen=True)
class LoadedCapture:
    """A capture as a constructor reads it: the parsed record, its bytes and their hash."""

    capture: Capture
    data: bytes
    sha256: str


@dataclass(frozen=True)
class CaptureStore:
    """The captures of one pool and analyst set under a run folder."""

    folder: Path
    pool: tuple[str, ...]
    sources: tuple[AnalystSource, ...]

    def path(self, day: str) -> Path:
        """Where the capture of decision day `day` lives."""
        return self.folder / f"{day}.json"

    async def load(self, view: MarketView) -> LoadedCapture:
        """The capture of `view`'s day: read from disk, or built and written first (once,
        under a lock: concurrent episodes of the run read the same bytes and a model
        analyst is asked once)."""

        async def build() -> bytes:
            return canonical_bytes(await build_capture(view, self.pool, self.sources))

        data = await build_once(self.path(str(view.as_of)), build)
        return LoadedCapture(Capture.model_validate_json(data), data, sha256_hex(data))


def pool_id(pool_size: int, seed: int, settings_key: str) -> str:
    """Folder name of a pool's captures: size, seed and a digest of the analysts' settings."""
    return f"k{pool_size}_s{seed}_{sha256_hex(settings_key.encode())[:10]}"
