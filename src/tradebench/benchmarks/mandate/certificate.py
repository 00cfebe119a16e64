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
2. `provenance_date`: the title or body names a date *with its year* later than the UTC
   calendar date of the record's own `ts_available`, in a sentence with no
   forward-looking word (`FORWARD`: "will", "expected", "scheduled", "expires", "ending",
   "next", ...; such mentions are counted as `forward_mentions`, not failed) and not in a
   table row. Dates are found by pattern and read by `dateutil` (`find_dates`): ISO and
   `2025/07/31`, `7/31/2025`, `31.07.2025`, `July 31, 2025`, `31 July 2025`, `31st of
   July`, quarters (`Q2 2025`, `2Q25`, `second quarter of 2025`) as the calendar
   quarter's last day; fiscal quarters are not read. A date written without a year is
   read nearest the record's own date and, when later, is a `provenance_unresolved` note:
   it makes `text_scan` UNKNOWN, as does a shown record with no readable date
   (`undated_records`); `SCAN_LIMITS` says what a text scan cannot catch.
3. `filing_period`: a `filing` available before its period of report (`ts_event`) is
   over: 10-K/10-Q before the end of the period's last day (`ts_available < ts_event +
   1 day`), other forms before the period date (`ts_available < ts_event`).
4. `cutoff` (per model behind the episode: its constructor and its set's model analysts;
   rule agents have no training data): UNKNOWN when the model's spec agent declares no
   `knowledge_cutoff`, or when `cutoff + margin months >=` the window start
   (`cutoff_reason`, which takes any cutoff date: stated or measured).

An episode is FAIL if any audit fails, else UNKNOWN if the cutoff rule says so, else
PASS; a model (agent) and the run take the worst of their episodes (FAIL > UNKNOWN >
PASS). The certificate states what the agent was shown, not what the model memorised.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Literal

import pandas as pd
from dateutil import parser as date_parser
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
    "gate",
    "unknown_record",
    "capture_hash",
    "provenance_date",
    "provenance_unresolved",
    "filing_period",
    "cutoff",
    "measured_horizon",
]
SEVERITY: dict[str, int] = {"PASS": 0, "UNKNOWN": 1, "FAIL": 2}
"""Order of verdicts when combining episodes: the worst wins."""
PERIODIC_FORMS = ("10-K", "10-Q")
MAX_SCAN_NOTES = 50

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+)?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_YEAR_TAIL = r"(?:,?\s+(\d{4})\b(?![,\s]*\d{4}\b))?"
_NUMERIC = re.compile(r"\b(\d{1,4})([/.-])(\d{1,2})\2(\d{4}|\d{2})\b(?![.-]\d)")
_MDY = re.compile(
    rf"\b{_WEEKDAY}({_MONTH})\.?\s+(\d{{1,2}}){_ORDINAL}\b{_YEAR_TAIL}", re.IGNORECASE
)
_DMY = re.compile(
    rf"\b{_WEEKDAY}(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?({_MONTH})\b\.?{_YEAR_TAIL}", re.IGNORECASE
)
_Q_ORD = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_QUARTER_WORDS = re.compile(
    r"\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+quarter\b"
    r"(?:\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?|FY\s*)?(\d{4})\b)?",
    re.IGNORECASE,
)
_QUARTER_CODE = re.compile(
    r"\b(?:Q([1-4])|([1-4])Q)(?:\s*(?:FY\s*|fiscal\s+)?'?(\d{4}|\d{2})\b)?", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.;!?\n](?:\s|$)")
_LAST_WORD = re.compile(r"([A-Za-z]+(?:\.[A-Za-z]+)*)$")
ABBREVIATIONS = frozenset(
    [
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "inc",
        "co",
        "corp",
        "ltd",
        "mr",
        "ms",
        "mrs",
        "dr",
        "st",
        "vs",
        "no",
        "u.s",
        "u.k",
        "e.g",
        "i.e",
        "approx",
        "est",
    ]
)
"""Words after which a `.` does not end a sentence (besides single letters: initials)."""
FORWARD = re.compile(
    r"\b(will|would|shall|expect\w*|expir\w*|due|matur\w*|ending|scheduled|set to|slated"
    r"|upcoming|next|plans? to|planned|gearing up|preparing|poised|anticipat\w*|estimated"
    r"|projected|forecast\w*|guidance|outlook|await\w*|deadline|could|should|might|likely"
    r"|effective|aim(?:s|ing)?|projects?|intend\w*|target\w*|coming|ahead|may (?:be|not))\b",
    re.IGNORECASE,
)
"""Forward-looking words: a later date in a sentence with one of these is a forward
mention (a schedule, an expiry, a maturity), not a report of a later event."""
SCAN_LIMITS = (
    'A text scan reads dates, not facts: a later event stated without any date ("revenue '
    'came in at $1.5 billion"), a relative date ("next Thursday", "last week"), a half '
    "year or a year alone, a fiscal quarter that is not the calendar quarter, and a leak "
    'written as a schedule ("will report on July 31") are not caught; a record the scan '
    "finds no date in is counted in `undated_records`, and its provenance is UNKNOWN."
)
"""What the provenance scan cannot catch, said in every certificate."""


class DateMention(BaseModel):
    """A date named in a record's text."""

    model_config = ConfigDict(frozen=True)

    text: str
    """The matched text, e.g. `July 31, 2025`."""
    day: date
    """The date it names (a quarter: its last day)."""
    yearless: bool = False
    """Written without a year (`July 31`, `the second quarter`): `day` is the reading
    nearest the record's own date, which the scan cannot confirm."""
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
    """The latest knowledge cutoff declared by the models behind the episode
    (YYYY-MM-DD), None when none is declared."""
    model_cutoffs: dict[str, str | None] = {}
    """Each model behind the episode (constructor, model analysts) -> its declared cutoff."""
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
    undated_records: int = 0
    """Shown records in which the scan read no date: their provenance is UNKNOWN."""
    unresolved_records: int = 0
    """Shown records naming a later-looking date without a year (UNKNOWN)."""
    text_scan: Verdict = "PASS"
    """The provenance scan alone: FAIL (a later dated event found), UNKNOWN (a shown
    record with no readable date, or a later-looking date without a year), PASS."""
    scan_limits: str = SCAN_LIMITS
    """What a text scan cannot catch."""
    scan_unknown: list[Reason] = []
    """The yearless later-looking dates (`provenance_unresolved`, first 50): they make
    `text_scan` UNKNOWN, not the verdict."""
    reasons: list[Reason]
    """Every finding, in rule then record order."""


@dataclass(frozen=True)
class Showing:
    """A record id cited in the capture of one decision day."""

    day: str
    record_id: str


def _sentence_ends(text: str, start: int = 0, stop: int | None = None) -> list[int]:
    """Offsets where sentences end (after the mark), abbreviations and initials aside."""
    out = []
    for m in _SENTENCE_END.finditer(text, start, len(text) if stop is None else stop):
        if m.group()[0] == ".":
            word = _LAST_WORD.search(text[max(0, m.start() - 8) : m.start()])
            if word and (len(word[1]) == 1 or word[1].lower() in ABBREVIATIONS):
                continue
        out.append(m.end())
    return out


def _sentence(text: str, start: int, end: int) -> str:
    left = max(_sentence_ends(text, 0, start), default=0)
    right = next(iter(_sentence_ends(text, end)), len(text))
    return text[left:right].strip()[:240]


def _nearest(candidates: list[date], around: date) -> date:
    return min(candidates, key=lambda d: (abs((d - around).days), d))


def _parse(span: str, around: date, dayfirst: bool = False) -> date | None:
    """`span` read by `dateutil`; a missing year is the one that puts the date nearest to
    `around` (the record's own date)."""
    try:
        day = date_parser.parse(span, default=datetime(around.year, 1, 1), dayfirst=dayfirst)
    except (ValueError, OverflowError):
        return None
    return day.date()


def _yearless(span: str, around: date) -> date | None:
    options = []
    for year in (around.year - 1, around.year, around.year + 1):
        try:
            options.append(date_parser.parse(span, default=datetime(year, 1, 1)).date())
        except (ValueError, OverflowError):
            continue
    return _nearest(options, around) if options else None


def _quarter_end(quarter: int, year: int) -> date:
    month = 3 * quarter
    return (pd.Timestamp(year=year, month=month, day=1) + pd.offsets.MonthEnd(0)).date()


def _year(text: str | None) -> int | None:
    if not text:
        return None
    return int(text) + 2000 if len(text) == 2 else int(text)


def _fiscal(text: str, m: re.Match[str]) -> bool:
    """A fiscal quarter (`FY`, `fiscal` in or right after the match): not a calendar one."""
    near = text[max(0, m.start() - 12) : m.end() + 24]
    return bool(re.search(r"fiscal|\bFY", near, re.IGNORECASE))


def _found(text: str, around: date) -> list[tuple[int, int, date, bool]]:
    out: list[tuple[int, int, date, bool]] = []
    for m in _NUMERIC.finditer(text):
        if m[2] != "/" and len(m[4]) == 2 and len(m[1]) != 4:
            continue  # `1.2.34`, `10-12-25`: versions and codes more often than dates
        d = _parse(m[0], around, dayfirst=m[2] == ".")
        out += [(m.start(), m.end(), d, False)] if d else []
    for pattern in (_MDY, _DMY):
        for m in pattern.finditer(text):
            d = _parse(m[0], around) if m[3] else _yearless(m[0], around)
            out += [(m.start(), m.end(), d, not m[3])] if d else []
    for m in _QUARTER_WORDS.finditer(text):
        if _fiscal(text, m):
            continue
        q, year = _Q_ORD[m[1].lower()], _year(m[2])
        ends = [_quarter_end(q, y) for y in ([year] if year else (around.year - 1, around.year))]
        out.append((m.start(), m.end(), _nearest(ends, around), year is None))
    for m in _QUARTER_CODE.finditer(text):
        if _fiscal(text, m):
            continue
        q, year = int(m[1] or m[2]), _year(m[3])
        ends = [_quarter_end(q, y) for y in ([year] if year else (around.year - 1, around.year))]
        out.append((m.start(), m.end(), _nearest(ends, around), year is None))
    return out


def find_dates(text: str, around: date | None = None) -> list[DateMention]:
    """Every date `text` names, in text order, read with `dateutil` (see the module
    docstring for the forms); a form without a year is read in the year that puts it
    nearest `around` (default today)."""
    around = around or date.today()
    found = _found(text, around)
    kept: list[tuple[int, int, date, bool]] = []
    for item in sorted(found, key=lambda x: (x[0], -(x[1] - x[0]))):
        if kept and item[0] < kept[-1][1]:
            continue  # inside a longer match already read
        kept.append(item)
    return [
        DateMention(text=text[s:e], day=d, sentence=_sentence(text, s, e), yearless=y)
        for s, e, d, y in kept
    ]


class Provenance(BaseModel):
    """What the scan of one record found."""

    model_config = ConfigDict(frozen=True)

    reasons: list[Reason]
    """`provenance_date` and `filing_period` findings."""
    forward: int
    """Later dates in forward-looking sentences."""
    dated: bool
    """Whether the scan read any date in the title or body."""
    unresolved: list[Reason] = []
    """Later-looking dates written without a year (`provenance_unresolved`, UNKNOWN)."""


@functools.lru_cache(maxsize=8192)
def provenance(record: Record) -> Provenance:
    """The record's own provenance findings, its forward mentions, and whether it is dated
    (a pure function of the frozen record, cached: every episode of a run scans the same
    records)."""
    out: list[Reason] = []
    assert record.ts_available is not None
    available = pd.Timestamp(record.ts_available)
    forward = 0
    mentions = find_dates(f"{record.title}\n{record.body}", available.date())
    unresolved: list[Reason] = []
    for m in mentions:
        if m.day <= available.date() or "|" in m.sentence:
            continue  # earlier, or a table row (option expiries, schedules)
        if FORWARD.search(m.sentence):
            forward += 1
            continue
        if m.yearless:
            unresolved.append(
                Reason(
                    rule="provenance_unresolved",
                    verdict="UNKNOWN",
                    record_id=record.record_id,
                    evidence=f"names {m.text!r} without a year (read as {m.day.isoformat()}, "
                    f"after its ts_available {available.isoformat()}): {m.sentence!r}",
                )
            )
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
    return Provenance(reasons=out, forward=forward, dated=bool(mentions), unresolved=unresolved)


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
    is_model: bool,
    cutoff: date | None,
    margin_months: int,
    window_start: date,
    who: str = "this model",
) -> Reason | None:
    """The cutoff rule for one model: UNKNOWN when no cutoff is given or when `cutoff +
    margin_months` is not before `window_start`, else None (and None for rule agents).

    `cutoff` may be a stated cutoff (`agents[].knowledge_cutoff`) or a measured one: the
    rule is the same.
    """
    if not is_model:
        return None
    if cutoff is None:
        return Reason(
            rule="cutoff",
            verdict="UNKNOWN",
            evidence=f"no knowledge cutoff declared for {who} (agents[].knowledge_cutoff)",
        )
    edge = (pd.Timestamp(cutoff) + pd.DateOffset(months=margin_months)).date()
    if edge >= window_start:
        return Reason(
            rule="cutoff",
            verdict="UNKNOWN",
            evidence=f"{who}: cutoff {cutoff.isoformat()} + {margin_months} months = "
            f"{edge.isoformat()} is not before the window start {window_start.isoformat()}",
        )
    return None


@dataclass(frozen=True)
class Audit:
    """The findings about the shown records."""

    reasons: list[Reason]
    forward: int
    undated: int
    unresolved: list[Reason]


def _audit(dataset: Dataset, shown: Sequence[Showing]) -> Audit:
    """Gate and provenance findings of the shown records, their forward mentions, how many
    of them the scan found no date in, and their yearless later-looking dates."""
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
    undated = 0
    unresolved: list[Reason] = []
    for record in audited.values():
        if record is not None and record.ts_available is not None:
            scan = provenance(record)
            reasons += scan.reasons
            forward += scan.forward
            undated += not scan.dated
            unresolved += scan.unresolved
    return Audit(reasons, forward, undated, unresolved)


def combine(verdicts: Iterable[str]) -> Verdict:
    """The worst of `verdicts` (FAIL > UNKNOWN > PASS); PASS when empty."""
    worst = max(verdicts, key=SEVERITY.__getitem__, default="PASS")
    return worst  # type: ignore[return-value]


@dataclass(frozen=True)
class EpisodeSubject:
    """Who is certified: the episode, its agent, and the models behind it (its constructor
    and its model analysts) with the knowledge cutoff each declares (None: undeclared)."""

    episode_id: str
    agent: str
    window_start: date
    cutoffs: Mapping[str, date | None]
    margin_months: int

    @property
    def is_model(self) -> bool:
        """Whether any model stands behind the episode."""
        return bool(self.cutoffs)


def certify(
    dataset: Dataset,
    subject: EpisodeSubject,
    shown: Sequence[Showing],
    capture_findings: Sequence[Reason] = (),
    captures_read: int = 0,
) -> EpisodeCertificate:
    """Audit what one episode was shown and apply the cutoff rule."""
    audit = _audit(dataset, shown)
    reasons = [*capture_findings, *audit.reasons]
    for name, cutoff in sorted(subject.cutoffs.items()):
        late = cutoff_reason(
            True, cutoff, subject.margin_months, subject.window_start, f"model {name!r}"
        )
        reasons += [late] if late else []
    provenance_fail = any(r.rule == "provenance_date" for r in reasons)
    unsure = audit.undated or audit.unresolved
    declared = [c for c in subject.cutoffs.values() if c is not None]
    return EpisodeCertificate(
        episode_id=subject.episode_id,
        agent=subject.agent,
        is_model=subject.is_model,
        window_start=subject.window_start.isoformat(),
        knowledge_cutoff=max(declared).isoformat() if declared else None,
        model_cutoffs={n: c.isoformat() if c else None for n, c in subject.cutoffs.items()},
        margin_months=subject.margin_months,
        verdict=combine(r.verdict for r in reasons),
        records_shown=len({s.record_id for s in shown}),
        showings=len(shown),
        captures_read=captures_read,
        forward_mentions=audit.forward,
        undated_records=audit.undated,
        unresolved_records=len({r.record_id for r in audit.unresolved}),
        text_scan="FAIL" if provenance_fail else ("UNKNOWN" if unsure else "PASS"),
        scan_limits=SCAN_LIMITS,
        scan_unknown=audit.unresolved[:MAX_SCAN_NOTES],
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
