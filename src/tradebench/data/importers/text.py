"""Shared helpers of the record importers: HTML to plain text, UTC stamps, source results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pandas as pd

from tradebench.data.schema import Finding

BLOCK_TAGS = frozenset(
    [
        "p",
        "div",
        "br",
        "li",
        "ul",
        "ol",
        "tr",
        "table",
        "thead",
        "tbody",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "figure",
        "figcaption",
        "hr",
        "pre",
        "section",
        "article",
        "header",
        "footer",
    ]
)
SKIP_TAGS = frozenset({"script", "style", "iframe", "noscript", "svg"})
CELL_TAGS = frozenset({"td", "th"})
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class SourceRecords:
    """What one source file contributed: records (canonical columns) and its findings.

    Attributes:
        frame: `kind, symbols, ts_event, ts_available, source, title, body, url`
            (optionally `record_id`), stamps tz-aware UTC.
        findings: problems specific to this source (e.g. conflicting stamps).
        label: the file's name, recorded in the manifest's `sources`.
    """

    frame: pd.DataFrame
    label: str
    findings: list[Finding] = field(default_factory=list)


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIP_TAGS:
            self.skip += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")
        elif tag in CELL_TAGS:
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:  # as in HTML, whitespace runs (newlines too) are one space
            self.parts.append(_WHITESPACE.sub(" ", data))


def html_to_text(html: str) -> str:
    """Plain text of an HTML fragment: tags and scripts removed, entities decoded, one line
    per block element (table cells joined by ` | `), whitespace collapsed, blank lines
    dropped. Deterministic."""
    if "<" not in html and "&" not in html:
        return _tidy(html)
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    return _tidy("".join(parser.parts))


def _tidy(text: str) -> str:
    lines = (_SPACES.sub(" ", line).strip().removeprefix("| ") for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def as_utc(values: pd.Series, naive_tz: str = "UTC") -> pd.Series:
    """Timestamps as `datetime64[ns, UTC]`; naive ones are read in `naive_tz`."""
    stamps = pd.to_datetime(values)
    if stamps.dt.tz is None:
        stamps = stamps.dt.tz_localize(naive_tz, ambiguous="raise", nonexistent="raise")
    return stamps.dt.tz_convert("UTC").astype("datetime64[ns, UTC]")
