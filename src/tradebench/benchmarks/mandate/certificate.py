"""The contamination certificate: PASS / FAIL / UNKNOWN per episode, model and run.

What an episode was *shown* is the set of record ids cited in the captures it read (the
steps' journaled `capture_sha256`, one capture per rebalance); the captures carry nothing
else about records (the news analyst's counts also rest on uncited older news of its
look-back, which is not audited here). Each shown record is audited against the dataset
through a `MarketView` at the calendar's last day (the only door to records), never by
trusting the capture's own `decision_time` or `violations`:

1. `gate`: `ts_available <= decision_time(T, market)` (`tradebench.data.clock`, recomputed)
   for every day T it was shown. A cited id the dataset does not hold (or holds only as
   available after the calendar's last decision instant) is `unknown_record`. A capture
   whose bytes no longer hash to the journaled sha256 is `capture_hash`.
2. `provenance_date`: the title or body names a date later than the UTC calendar date of
   the record's own `ts_available`, in a sentence with no forward-looking word
   (`FORWARD`: "will", "expected", "scheduled", "expires", "ending", "next", ...; such
   mentions are counted as `forward_mentions`, not failed). Dates read (`find_dates`):
   ISO `2025-07-31`; `July 31, 2025` / `Jul. 31st 2025`; `31 July 2025`; quarters
   `Q3 2025` / `Q3 FY2025` as the calendar quarter's last day. A day-month-year whose
   year is followed by another year (a table header `december 31, 2025 2024`) is skipped.
3. `filing_period`: a `filing` available before its period of report (`ts_event`) is
   over: 10-K/10-Q before the end of the period's last day (`ts_available < ts_event +
   1 day`), other forms before the period date (`ts_available < ts_event`).
4. `cutoff` (model agents only; rule agents have no training data): UNKNOWN when the
   options declare no knowledge cutoff for the agent, or when `cutoff + margin months >=`
   the window start.

An episode is FAIL if any audit fails, else UNKNOWN if the cutoff rule says so, else
PASS; a model (agent) and the run take the worst of their episodes (FAIL > UNKNOWN >
PASS). The certificate states what the agent was shown, not what the model memorised.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.mandate.capture import Capture, sha256_hex
from tradebench.data.clock import decision_time
from tradebench.data.dataset import Dataset
from tradebench.data.records import Record
from tradebench.files import write_bytes_atomic
from tradebench.view import MarketView

CERTIFICATE_VERSION = 1
CERTIFICATE_FILE = "certificate.json"
RUN_TABLE_FILE = "certificate.parquet"
Verdict = Literal["PASS", "FAIL", "UNKNOWN"]
Rule = Literal[
    "gate", "unknown_record", "capture_hash", "provenance_date", "filing_period", "cutoff",
    "measured_horizon",
]  # fmt: skip
SEVERITY: dict[str, int] = {"PASS": 0, "UNKNOWN": 1, "FAIL": 2}
"""Order of verdicts when combining episodes: the worst wins."""
PERIODIC_FORMS = ("10-K", "10-Q")

_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"(\d{4})\b(?![,\s]*\d{4}\b)"
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MDY = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}", re.IGNORECASE)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}\.?,?\s+{_YEAR}", re.IGNORECASE)
_QUARTER = re.compile(rf"\bQ([1-4])\s*(?:FY\s*)?{_YEAR}", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.;!?\n](?:\s|$)")
FORWARD = re.compile(
    r"\b(will|would|shall|expect\w*|expir\w*|due|matur\w*|ending|scheduled|set to|slated"
    r"|upcoming|next|plans? to|planned|gearing up|preparing|poised|anticipat\w*|estimated"
    r"|projected|forecast\w*|guidance|outlook|await\w*|deadline)\b",
    re.IGNORECASE,
)
"""Forward-looking words: a later date in a sentence with one of these is a forward
mention (a schedule, an expiry, a maturity), not a report of a later event."""
_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
)}  # fmt: skip


class DateMention(BaseModel):
    """A date named in a record's text."""

    model_config = ConfigDict(frozen=True)

    text: str
    """The matched text, e.g. `July 31, 2025`."""
    day: date
    """The date it names (a quarter: its last day)."""
    sentence: str
    """The sentence it stands in (trimmed to 240 characters)."""


class Reason(BaseModel):
    """One finding behind a verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    rule: Rule
    """Which rule (see the module docstring)."""
    verdict: Verdict
    """What the finding makes the episode: FAIL or UNKNOWN."""
    record_id: str | None = None
    """The record concerned (None for the cutoff rule)."""
    day: str | None = None
    """The decision day it was shown on (gate, capture) or None."""
    evidence: str
    """What was found, in words (the date named, the stamps compared)."""


class EpisodeCertificate(BaseModel):
    """`certificate.json` of one episode."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    schema_version: int = CERTIFICATE_VERSION
    """Version of this record."""
    episode_id: str
    """The episode."""
    agent: str
    """The spec's agent name."""
    is_model: bool
    """Whether the agent is a model (the cutoff rule applies only then)."""
    window_start: str
    """First day of the episode's window (YYYY-MM-DD)."""
    knowledge_cutoff: str | None
    """The declared knowledge cutoff (YYYY-MM-DD), None when undeclared."""
    margin_months: int
    """The configured cutoff margin."""
    verdict: Verdict
    """FAIL if any audit failed, else UNKNOWN if the cutoff rule says so, else PASS."""
    records_shown: int
    """Distinct record ids cited in the captures the episode read."""
    showings: int
    """(decision day, record id) pairs audited by the gate."""
    captures_read: int
    """Captures the episode read (rebalance steps)."""
    forward_mentions: int
    """Later dates in forward-looking sentences (not failed; see `FORWARD`)."""
    reasons: list[Reason]
    """Every finding, in rule then record order."""


@dataclass(frozen=True)
class Showing:
    """A record id cited in the capture of one decision day."""

    day: str
    record_id: str


def _day(year: int, month: int, dom: int) -> date | None:
    try:
        return date(year, month, dom)
    except ValueError:
        return None


def _sentence(text: str, start: int, end: int) -> str:
    left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    stop = _SENTENCE_END.search(text, end)
    return text[left : stop.start() if stop else len(text)].strip()[:240]


def find_dates(text: str) -> list[DateMention]:
    """Every date `text` names (see the module docstring for the forms), in text order."""
    found: list[tuple[int, int, date]] = []
    for m in _ISO.finditer(text):
        d = _day(int(m[1]), int(m[2]), int(m[3]))
        found += [(m.start(), m.end(), d)] if d else []
    for m in _MDY.finditer(text):
        d = _day(int(m[3]), _MONTHS[m[1][:3].lower()], int(m[2]))
        found += [(m.start(), m.end(), d)] if d else []
    for m in _DMY.finditer(text):
        d = _day(int(m[3]), _MONTHS[m[2][:3].lower()], int(m[1]))
        found += [(m.start(), m.end(), d)] if d else []
    for m in _QUARTER.finditer(text):
        end = pd.Timestamp(year=int(m[2]), month=3 * int(m[1]), day=1) + pd.offsets.MonthEnd(0)
        found.append((m.start(), m.end(), end.date()))
    return [
        DateMention(text=text[s:e], day=d, sentence=_sentence(text, s, e))
        for s, e, d in sorted(found, key=lambda x: x[0])
    ]


def provenance(record: Record) -> tuple[list[Reason], int]:
    """The record's own provenance findings and its count of forward mentions."""
    out: list[Reason] = []
    assert record.ts_available is not None
    available = pd.Timestamp(record.ts_available)
    forward = 0
    for m in find_dates(f"{record.title}\n{record.body}"):
        if m.day <= available.date():
            continue
        if FORWARD.search(m.sentence):
            forward += 1
            continue
        out.append(
            Reason(
                rule="provenance_date",
                verdict="FAIL",
                record_id=record.record_id,
                evidence=f"names {m.day.isoformat()} ({m.text!r}) after its ts_available "
                f"{available.isoformat()}: {m.sentence!r}",
            )
        )
    if record.kind == "filing" and record.ts_event is not None:
        period = pd.Timestamp(record.ts_event)
        periodic = any(f in record.title for f in PERIODIC_FORMS)
        over = period + pd.Timedelta(days=1) if periodic else period
        if available < over:
            out.append(
                Reason(
                    rule="filing_period",
                    verdict="FAIL",
                    record_id=record.record_id,
                    evidence=f"accepted {available.isoformat()}, before its period ended "
                    f"({period.date().isoformat()})",
                )
            )
    return out, forward


def read_showings(
    folder: Path, steps: Sequence[tuple[str, str | None]]
) -> tuple[list[Showing], list[Reason], int]:
    """The (day, cited id) pairs of the captures an episode read.

    Args:
        folder: the pool's capture folder.
        steps: per step, the decision day and the journaled capture sha256 (None: no read).

    Returns:
        The showings, `capture_hash` findings, and how many captures were read.
    """
    shown: list[Showing] = []
    bad: list[Reason] = []
    read = 0
    for day, sha in steps:
        if sha is None:
            continue
        read += 1
        path = folder / f"{day}.json"
        data = path.read_bytes() if path.exists() else b""
        if sha256_hex(data) != sha:
            bad.append(
                Reason(
                    rule="capture_hash",
                    verdict="FAIL",
                    day=day,
                    evidence=f"{path.name} does not hash to the journaled sha256 {sha[:12]}…",
                )
            )
            continue
        capture = Capture.model_validate_json(data)
        ids = dict.fromkeys(rid for sig in capture.signals for rid in sig.cited)
        shown += [Showing(day, rid) for rid in ids]
    return shown, bad, read


def cutoff_reason(
    is_model: bool, cutoff: date | None, margin_months: int, window_start: date
) -> Reason | None:
    """The cutoff rule's UNKNOWN finding, or None (rule agents, or cutoff well before)."""
    if not is_model:
        return None
    if cutoff is None:
        return Reason(
            rule="cutoff",
            verdict="UNKNOWN",
            evidence="no knowledge cutoff declared for this model (options.knowledge_cutoffs)",
        )
    edge = (pd.Timestamp(cutoff) + pd.DateOffset(months=margin_months)).date()
    if edge >= window_start:
        return Reason(
            rule="cutoff",
            verdict="UNKNOWN",
            evidence=f"cutoff {cutoff.isoformat()} + {margin_months} months = "
            f"{edge.isoformat()} is not before the window start {window_start.isoformat()}",
        )
    return None


def _audit(dataset: Dataset, shown: Sequence[Showing]) -> tuple[list[Reason], int]:
    """Gate and provenance findings of the shown records, and their forward mentions."""
    auditor = MarketView(dataset, dataset.panel.dates[-1])
    reasons: list[Reason] = []
    audited: dict[str, Record | None] = {}
    forward = 0
    for s in shown:
        if s.record_id not in audited:
            try:
                audited[s.record_id] = auditor.record(s.record_id)
            except KeyError:
                audited[s.record_id] = None
        record = audited[s.record_id]
        if record is None or record.ts_available is None:
            reasons.append(
                Reason(
                    rule="unknown_record",
                    verdict="FAIL",
                    record_id=s.record_id,
                    day=s.day,
                    evidence="not in the dataset's records available by the calendar's end",
                )
            )
            continue
        instant = decision_time(s.day, dataset.market)
        available = pd.Timestamp(record.ts_available)
        if available > instant:
            reasons.append(
                Reason(
                    rule="gate",
                    verdict="FAIL",
                    record_id=s.record_id,
                    day=s.day,
                    evidence=f"ts_available {available.isoformat()} is after the decision "
                    f"time {instant.isoformat()} of {s.day}",
                )
            )
    for record in audited.values():
        if record is not None and record.ts_available is not None:
            found, n = provenance(record)
            reasons += found
            forward += n
    return reasons, forward


def combine(verdicts: Iterable[str]) -> Verdict:
    """The worst of `verdicts` (FAIL > UNKNOWN > PASS); PASS when empty."""
    worst = max(verdicts, key=SEVERITY.__getitem__, default="PASS")
    return worst  # type: ignore[return-value]


@dataclass(frozen=True)
class EpisodeSubject:
    """Who is certified: the episode, its agent and the cutoff declared for it."""

    episode_id: str
    agent: str
    is_model: bool
    window_start: date
    cutoff: date | None
    margin_months: int


def certify(
    dataset: Dataset,
    subject: EpisodeSubject,
    shown: Sequence[Showing],
    capture_findings: Sequence[Reason] = (),
    captures_read: int = 0,
) -> EpisodeCertificate:
    """Audit what one episode was shown and apply the cutoff rule."""
    reasons, forward = _audit(dataset, shown)
    reasons = [*capture_findings, *reasons]
    late = cutoff_reason(
        subject.is_model, subject.cutoff, subject.margin_months, subject.window_start
    )
    reasons += [late] if late else []
    return EpisodeCertificate(
        episode_id=subject.episode_id,
        agent=subject.agent,
        is_model=subject.is_model,
        window_start=subject.window_start.isoformat(),
        knowledge_cutoff=subject.cutoff.isoformat() if subject.cutoff else None,
        margin_months=subject.margin_months,
        verdict=combine(r.verdict for r in reasons),
        records_shown=len({s.record_id for s in shown}),
        showings=len(shown),
        captures_read=captures_read,
        forward_mentions=forward,
        reasons=reasons,
    )


def write_certificate(folder: Path, cert: EpisodeCertificate) -> Path:
    """Write `certificate.json` into an episode folder."""
    path = folder / CERTIFICATE_FILE
    # whole, so a run table built meanwhile never reads half a file
    write_bytes_atomic(path, (cert.model_dump_json(indent=2) + "\n").encode())
    return path


def read_certificates(run_dir: Path) -> list[EpisodeCertificate]:
    """Every episode certificate under `run_dir/episodes/`, by episode id."""
    paths = sorted((Path(run_dir) / "episodes").glob(f"*/{CERTIFICATE_FILE}"))
    return [EpisodeCertificate.model_validate_json(p.read_text()) for p in paths]


def run_table(certs: Sequence[EpisodeCertificate]) -> pd.DataFrame:
    """Per agent, then the whole run (`agent` = `(run)`): verdict, episode counts by
    verdict, failing records and the distinct reasons."""
    rows = []
    groups = {a: [c for c in certs if c.agent == a] for a in sorted({c.agent for c in certs})}
    for agent, group in [*groups.items(), ("(run)", list(certs))]:
        reasons = [r for c in group for r in c.reasons]
        rows.append(
            {
                "agent": agent,
                "verdict": combine(c.verdict for c in group),
                "episodes": len(group),
                **{v.lower(): sum(c.verdict == v for c in group) for v in SEVERITY},
                "failed_records": len({r.record_id for r in reasons if r.verdict == "FAIL"}),
                "reasons": sorted({f"{r.rule}: {r.record_id or ''} {r.evidence}" for r in reasons}),
            }
        )
    return pd.DataFrame(rows)


def write_run_table(run_dir: Path) -> Path:
    """Rewrite `RUN_DIR/certificate.parquet` from every episode certificate written so far.

    Held under an exclusive lock: episodes run in several processes, each writes its own
    certificate first, so the last writer's table includes every finished episode.
    """
    run_dir = Path(run_dir)
    path = run_dir / RUN_TABLE_FILE
    with open(run_dir / "certificate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        table = run_table(read_certificates(run_dir))
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        table.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    return path


def summary_fields(cert: EpisodeCertificate) -> dict[str, object]:
    """The certificate's columns of `summary.parquet`."""
    return {
        "certificate": cert.verdict,
        "certificate_reasons": json.dumps(
            [f"{r.rule}: {r.record_id or ''} {r.evidence}".strip() for r in cert.reasons]
        ),
        "records_shown": cert.records_shown,
    }
