"""Strict reading of the answer letter in a no-tools reply.

Accepted forms (anything else is unparseable and scored wrong):

1. **A final answer line.** The last non-empty line of the reply is
   `Answer: X`, where X is A, B, C or D. Tolerated around it: Markdown emphasis or a
   heading mark (`**Answer:** B`, `### Answer: B`), the words `the`/`my`/`final`/`correct`
   before `answer` and `is` after it (`Final answer is B`), `:` or `=` or nothing between,
   brackets around the letter (`(B)`, `[B]`), and an echo of the option after a delimiter
   (`Answer: B) 1,234.57`, `Answer: B - 12.5%`). The keyword and the letter may be in any
   case.
2. **A lone letter.** The whole reply is one capital letter, optionally bracketed, bold or
   followed by a full stop: `B`, `(B)`, `B.`, `**B**`.

Refused on purpose: an answer line followed by more text (the final line decides), two
letters (`Answer: A or B`), a letter glued to a word (`Answer: Buy`), a lower-case lone
letter (it is also a word), and `\\boxed{}` or other formats.
"""

from __future__ import annotations

import re

_PREFIX = r"^[#>*_\s]*(?i:(?:the|my)\s+)?(?i:(?:final|correct)\s+)?(?i:answer)"
_ANSWER_LINE = re.compile(
    _PREFIX + r"[*_]*\s*(?i:is\b)?\s*[:=]?\s*[*_]*\s*[(\[]?\s*(?P<letter>[A-Da-d])(?P<rest>.*)$"
)
_LONE = re.compile(r"^[*_]*[(\[]?(?P<letter>[A-D])[)\]]?\.?[*_]*$")
_DELIMITERS = ")].:,;-–—("


def _tail_ok(rest: str) -> bool:
    """True when what follows the letter cannot change which letter was meant."""
    rest = rest.strip().lstrip("*_").lstrip()
    return not rest or rest[0] in _DELIMITERS


def parse_letter(text: str) -> str | None:
    """The chosen letter (A-D) of a reply in one of the accepted forms, else None."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    if len(lines) == 1:
        lone = _LONE.match(lines[0])
        if lone:
            return lone.group("letter")
    match = _ANSWER_LINE.match(lines[-1])
    if match is None or not _tail_ok(match.group("rest")):
        return None
    return match.group("letter").upper()
