"""Read a generator reply: the `<<<QUESTION>>>`, `<<<CODE>>>` and `<<<RATIONALE>>>` blocks.

A block starts at its marker and runs to the next `<<<NAME>>>` marker (any name, so a
closing `<<<END>>>` is tolerated) or the end of the reply; text before the first marker is
ignored. Each of the three blocks must appear exactly once and be non-empty; a Markdown
fence around the code is removed. Anything else is a `MalformedReply` saying what is wrong.
An optional `<<<DOMAIN>>>` block labels the question (one of `DOMAINS`, else `other`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

REQUIRED = ("QUESTION", "CODE", "RATIONALE")
OPTIONAL = ("DOMAIN",)
DOMAINS = (
    "backtesting",
    "technical indicators",
    "performance and risk metrics",
    "market data",
    "statistics",
    "derivatives and pricing",
    "other",
)
"""Domain labels a generator may give a question (anything else becomes `other`)."""
_MARKER = re.compile(r"<<<\s*([A-Za-z_]+)\s*>>>")
_FENCE = re.compile(r"^```[A-Za-z0-9_+-]*[ \t]*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)


class MalformedReply(ValueError):
    """The reply lacks a block, repeats one, or leaves one empty."""


@dataclass(frozen=True)
class Blocks:
    """The three parts of a generated question."""

    question: str
    code: str
    rationale: str
    domain: str = "unlabelled"


def _unfence(code: str) -> str:
    match = _FENCE.match(code.strip())
    return match.group("body") if match else code


def parse_blocks(text: str) -> Blocks:
    """The blocks of a reply.

    Raises:
        MalformedReply: A required block is missing, repeated or empty.
    """
    marks = list(_MARKER.finditer(text))
    found: dict[str, str] = {}
    for i, mark in enumerate(marks):
        name = mark.group(1).upper()
        if name not in REQUIRED + OPTIONAL:
            continue
        if name in found:
            raise MalformedReply(f"<<<{name}>>> appears more than once")
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        found[name] = text[mark.end() : end].strip()
    missing = [n for n in REQUIRED if n not in found]
    if missing:
        raise MalformedReply("missing " + ", ".join(f"<<<{n}>>>" for n in missing) + " block")
    found["CODE"] = _unfence(found["CODE"]).strip("\n")
    empty = [n for n in REQUIRED if not found[n].strip()]
    if empty:
        raise MalformedReply("empty " + ", ".join(f"<<<{n}>>>" for n in empty) + " block")
    domain = "unlabelled"
    if "DOMAIN" in found:
        label = " ".join(found["DOMAIN"].split()).casefold()
        domain = label if label in DOMAINS else "other"
    return Blocks(found["QUESTION"], found["CODE"] + "\n", found["RATIONALE"], domain)


def content_sha256(question: str, options: Mapping[str, str], answer_value: str) -> str:
    """SHA-256 of the whole question: normalised text, the options sorted, the answer value.
    The same text with other options (other code, other data) is a different question."""
    blob = json.dumps(
        {
            "question": " ".join(question.split()).casefold(),
            "options": sorted(" ".join(o.split()) for o in options.values()),
            "answer": answer_value.strip(),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def question_sha256(question: str) -> str:
    """SHA-256 of the whitespace-normalised, case-folded question text (the dedup key)."""
    return hashlib.sha256(" ".join(question.split()).casefold().encode()).hexdigest()
