"""Read a generator reply: the `<<<QUESTION>>>`, `<<<CODE>>>` and `<<<RATIONALE>>>` blocks.

A block starts at its marker and runs to the next `<<<NAME>>>` marker (any name, so a
closing `<<<END>>>` is tolerated) or the end of the reply; text before the first marker is
ignored. Each of the three blocks must appear exactly once and be non-empty; a Markdown
fence around the code is removed. Anything else is a `MalformedReply` saying what is wrong.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

REQUIRED = ("QUESTION", "CODE", "RATIONALE")
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
        if name not in REQUIRED:
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
    return Blocks(found["QUESTION"], found["CODE"] + "\n", found["RATIONALE"])


def question_sha256(question: str) -> str:
    """SHA-256 of the whitespace-normalised, case-folded question text (the dedup key)."""
    return hashlib.sha256(" ".join(question.split()).casefold().encode()).hexdigest()
