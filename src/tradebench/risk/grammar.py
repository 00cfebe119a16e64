"""The deterministic mandate compiler: a small phrase grammar -> `RiskConstraints`.

A mandate is sentences separated by `.` (followed by a space or the end), `;` or a line
break. Each sentence must be one phrase of the grammar (docs/risk.md has the table), read
case-insensitively; anything else is a `MandateError` naming the sentence. Percentages are
written `10%` or `10 percent` and read exactly (`2.5%` is `0.025`), so
`compile_mandate(render_constraints(c)) == c`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from tradebench.errors import MandateError
from tradebench.risk.constraints import RiskConstraints

_SENTENCE_END = re.compile(r"[;\n]+|\.(?=\s|$)")
_NUM = r"\d+(?:\.\d+)?"
_MAX = r"(?:no more than|not more than|at most|up to|a maximum of|maximum of|maximum|max)"
_MIN = r"(?:at least|no less than|not less than|a minimum of|minimum of|minimum|min)"
_NAME = r"(?:names?|stocks?|positions?|holdings?|securities|security|issuers?|companies|company)"
_ANY = r"(?:(?:any|each|every|a|one)\s+)?(?:single\s+)?"
_KEEP = r"(?:(?:keep|hold|maintain|have)\s+)?"
_PER_REBALANCE = r"(?:\s+(?:per|each|every|a)\s+(?:rebalance|rebalancing|rebalance date|step))?"
_LIST_SPLIT = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")

Updates = dict[str, Any]


def _pct(name: str) -> str:
    return rf"(?P<{name}>{_NUM})\s*(?:%|percent)"


def _fraction(text: str) -> float:
    """`"2.5"` (a percentage) as the fraction 0.025, read exactly."""
    return float(Decimal(text) / Decimal(100))


def _names(text: str) -> list[str]:
    return [n for n in _LIST_SPLIT.split(text.strip()) if n]


_RULES: list[tuple[str, Callable[[re.Match[str]], Updates]]] = [
    (r"no constraints", lambda m: {}),
    (
        r"long[- ]only|no short(?:ing| selling| sales| positions)?",
        lambda m: {"long_only": True},
    ),
    (
        r"(?:short(?:ing| selling| positions)?\s+(?:are\s+|is\s+)?allowed|long[/ -]short)",
        lambda m: {"long_only": False},
    ),
    (
        rf"{_MAX}\s+{_pct('x')}\s+(?:in|per|for)\s+{_ANY}{_NAME}",
        lambda m: {"max_weight": _fraction(m["x"])},
    ),
    (
        rf"(?:each|every|any)\s+(?:single\s+)?{_NAME}\s+{_MAX}\s+{_pct('x')}",
        lambda m: {"max_weight": _fraction(m["x"])},
    ),
    (
        rf"{_MIN}\s+{_pct('x')}\s+(?:(?:in|per|for)\s+(?:each|every|any)\s+|per\s+)"
        rf"{_NAME}(?:\s+held)?",
        lambda m: {"min_position": _fraction(m["x"])},
    ),
    (
        rf"{_MAX}\s+{_pct('x')}\s+(?:in|per|for)\s+{_ANY}sectors?",
        lambda m: {"max_sector_weight": _fraction(m["x"])},
    ),
    (
        rf"{_MAX}\s+{_pct('x')}\s+in\s+(?:the\s+)?(?P<sector>.+?)\s+sector",
        lambda m: {"sector_caps": {m["sector"]: _fraction(m["x"])}},
    ),
    (
        rf"{_KEEP}between\s+(?P<lo>\d+)\s+and\s+(?P<hi>\d+)\s+{_NAME}",
        lambda m: {"min_names": int(m["lo"]), "max_names": int(m["hi"])},
    ),
    (
        rf"{_KEEP}exactly\s+(?P<n>\d+)\s+{_NAME}",
        lambda m: {"min_names": int(m["n"]), "max_names": int(m["n"])},
    ),
    (rf"{_KEEP}{_MIN}\s+(?P<n>\d+)\s+{_NAME}", lambda m: {"min_names": int(m["n"])}),
    (rf"{_KEEP}{_MAX}\s+(?P<n>\d+)\s+{_NAME}", lambda m: {"max_names": int(m["n"])}),
    (
        rf"{_KEEP}(?:cash\s+)?between\s+{_pct('lo')}\s+and\s+{_pct('hi')}(?:\s+in\s+cash)?",
        lambda m: {"cash_floor": _fraction(m["lo"]), "cash_ceiling": _fraction(m["hi"])},
    ),
    (
        rf"{_KEEP}{_MIN}\s+{_pct('x')}\s+(?:in\s+)?cash|cash\s+{_MIN}\s+{_pct('y')}",
        lambda m: {"cash_floor": _fraction(m["x"] or m["y"])},
    ),
    (
        rf"{_KEEP}{_MAX}\s+{_pct('x')}\s+(?:in\s+)?cash|cash\s+{_MAX}\s+{_pct('y')}",
        lambda m: {"cash_ceiling": _fraction(m["x"] or m["y"])},
    ),
    (
        rf"(?:turnover\s+(?:of\s+)?{_MAX}\s+{_pct('x')}|{_MAX}\s+{_pct('y')}\s+turnover)"
        + _PER_REBALANCE,
        lambda m: {"max_turnover": _fraction(m["x"] or m["y"])},
    ),
    (
        rf"gross\s+exposure\s+(?:of\s+)?{_MAX}\s+{_pct('x')}|"
        rf"{_MAX}\s+{_pct('y')}\s+gross(?:\s+exposure)?",
        lambda m: {"max_gross": _fraction(m["x"] or m["y"])},
    ),
    (r"no leverage", lambda m: {"max_gross": 1.0}),
    (
        r"(?:exclude|do not hold|don't hold|never hold|no positions in|avoid)\s+(?P<names>.+)",
        lambda m: {"excluded": _names(m["names"])},
    ),
]
_COMPILED = [(re.compile(p, re.IGNORECASE), f) for p, f in _RULES]


def split_sentences(text: str) -> list[str]:
    """The mandate's sentences, whitespace collapsed, empty ones dropped."""
    parts = (" ".join(s.split()) for s in _SENTENCE_END.split(text))
    return [p for p in parts if p]


def parse_sentence(sentence: str) -> Updates | None:
    """The fields one sentence sets, or None when no phrase of the grammar matches it."""
    for pattern, build in _COMPILED:
        match = pattern.fullmatch(sentence)
        if match is not None:
            return build(match)
    return None


def _merge(fields: Updates, origin: dict[str, str], update: Updates, sentence: str) -> None:
    """Fold one sentence's fields in; a field set twice to different values is an error."""
    for key, value in update.items():
        if key == "excluded":
            fields.setdefault(key, []).extend(value)
            origin[key] = sentence
            continue
        if key == "sector_caps":
            caps = fields.setdefault(key, {})
            for sector, cap in value.items():
                if sector in caps and caps[sector] != cap:
                    raise MandateError(
                        f"the mandate caps the {sector} sector twice: {origin[key + sector]!r} "
                        f"and {sentence!r}; keep one"
                    )
                caps[sector] = cap
                origin[key + sector] = sentence
            continue
        if key in fields and fields[key] != value:
            raise MandateError(
                f"the mandate sets {key} twice: {origin[key]!r} and {sentence!r}; keep one"
            )
        fields[key], origin[key] = value, sentence


def compile_mandate(text: str) -> RiskConstraints:
    """Compile a plain-English mandate with the phrase grammar of docs/risk.md.

    Raises:
        MandateError: The mandate is empty, a sentence matches no phrase (every such
            sentence is named), a constraint is set twice, or the constraints are out of
            range or contradict each other.
    """
    sentences = split_sentences(text)
    if not sentences:
        raise MandateError(
            "the mandate is empty; write `No constraints.` for an unconstrained portfolio"
        )
    fields: Updates = {}
    origin: dict[str, str] = {}
    unread = []
    for sentence in sentences:
        update = parse_sentence(sentence)
        if update is None:
            unread.append(sentence)
        else:
            _merge(fields, origin, update, sentence)
    if unread:
        listed = "; ".join(repr(s) for s in unread)
        raise MandateError(
            f"cannot read mandate sentence(s) {listed}: each sentence must be one phrase "
            "of the mandate grammar (e.g. `Long only.`, `No more than 10% in any single "
            "name.`, `Hold between 5 and 15 names.`; the full table is in docs/risk.md)"
        )
    try:
        return RiskConstraints(**fields)
    except ValidationError as exc:
        raise MandateError(_explain(exc, fields, origin)) from None


def _explain(exc: ValidationError, fields: Updates, origin: dict[str, str]) -> str:
    """A one-line reason for invalid constraints, naming the sentence behind each field."""
    sectors = list(fields.get("sector_caps", {}))
    reasons = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        msg = error["msg"].removeprefix("Value error, ")
        where = origin.get(loc[0]) if loc else None
        if loc[:1] == ["sector_caps"] and len(loc) > 1 and loc[1].isdigit():
            where = origin.get("sector_caps" + sectors[int(loc[1])])
        reasons.append(f"{msg} (in {where!r})" if where else msg)
    return "invalid mandate: " + "; ".join(reasons)
