"""The no-leak tests' audit, written independently of `tradebench.masking`.

It has its own patterns for every date form a text can carry (ISO, compact, slashed,
dotted, textual in English, Chinese) and for every real code of a dataset (as written, and
A-share codes also as `600519.SH` / `600519`-with-exchange forms), so a form the masker
stops handling shows up here instead of being missed by the masker's own regex.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

import numpy as np

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_OF = {name.lower(): i + 1 for i, name in enumerate(MONTHS)}
_MONTH_OF |= {name[:3].lower(): i + 1 for i, name in enumerate(MONTHS)}
_MONTH_OF["sept"] = 9
_NAME = r"([A-Za-z]{3,9})\.?"
CANDIDATES = (
    ("ymd", re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")),
    ("ymd", re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})(?!\d)")),
    ("ymd", re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")),
    ("mdy", re.compile(_NAME + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})")),
    ("dmy", re.compile(r"(?<!\d)(\d{1,2})(?:st|nd|rd|th)?\s+" + _NAME + r",?\s+(\d{4})")),
)


def date_forms(day: date) -> list[str]:
    """Every written form of `day` the masks must hide (used to build test inputs)."""
    y, m, d = day.year, day.month, day.day
    name = MONTHS[m - 1]
    return [
        f"{y:04d}-{m:02d}-{d:02d}",
        f"{y:04d}{m:02d}{d:02d}",
        f"{y:04d}/{m:02d}/{d:02d}",
        f"{y:04d}.{m:02d}.{d:02d}",
        f"{name} {d}, {y}",
        f"{name[:3]} {d}, {y}",
        f"{d} {name} {y}",
        f"{d} {name[:3]} {y}",
        f"{y}年{m}月{d}日",
    ]


def _as_date(kind: str, groups: tuple[str, ...]) -> date | None:
    try:
        if kind == "ymd":
            return date(int(groups[0]), int(groups[1]), int(groups[2]))
        if kind == "mdy":
            month = _MONTH_OF.get(groups[0].lower())
            return date(int(groups[2]), month, int(groups[1])) if month else None
        month = _MONTH_OF.get(groups[1].lower())
        return date(int(groups[2]), month, int(groups[0])) if month else None
    except ValueError:
        return None


def _code_forms(symbol: str) -> list[str]:
    forms = [symbol]
    if len(symbol) == 8 and symbol[:2] in ("SH", "SZ", "BJ") and symbol[2:].isdigit():
        forms += [f"{symbol[2:]}.{symbol[:2]}", f"{symbol[:2]}.{symbol[2:]}"]
    return forms


def find_leaks(
    text: str,
    symbols: Iterable[str],
    calendar: np.ndarray,
    stocks: bool = True,
    dates: bool = True,
) -> list[str]:
    """Real codes (when `stocks`) and real trading dates (when `dates`) found in `text`."""
    found: list[str] = []
    if stocks:
        forms = sorted({f for s in symbols for f in _code_forms(str(s))}, key=len, reverse=True)
        if forms:
            pattern = "|".join(re.escape(f) for f in forms)
            found += re.findall(rf"(?<![A-Za-z0-9])(?:{pattern})(?![A-Za-z0-9])", text)
    if dates:
        days = {np.datetime64(d, "D").item() for d in np.asarray(calendar)}
        for kind, regex in CANDIDATES:
            for match in regex.finditer(text):
                if _as_date(kind, match.groups()) in days:
                    found.append(match.group(0))
    return found


NUMBER_RE = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d.,]*%)(?![\w])")
"""A number as text or JSON writes it (`1,234.56`, `17.37`, `-0.05`, `100`); a percentage
(`+2.35%`) is a share, not a level, and is left out."""


def numbers(text: str) -> list[tuple[float, int]]:
    """Every number in `text` with its count of decimals."""
    out = []
    for token in NUMBER_RE.findall(text):
        plain = token.replace(",", "")
        out.append((float(plain), len(plain.split(".")[1]) if "." in plain else 0))
    return out


def find_price_levels(text: str, prices: Iterable[float]) -> list[float]:
    """Numbers written with 2 decimals or more that are one of the raw `prices` (on their
    0.01 tick): a raw level put in front of the model. A number off the tick (`23.4512`, a
    rebased `101.234`) is no raw price; one with fewer decimals is a count or a score
    (`33.1`), so a raw level on a 0.1 tick written short is not looked for."""
    levels = {round(float(p), 2) for p in prices if np.isfinite(p)}
    return [
        value
        for value, decimals in numbers(text)
        if decimals >= 2 and abs(value - round(value, 2)) < 1e-9 and round(value, 2) in levels
    ]


def find_names(text: str, names: Iterable[str]) -> list[str]:
    """Company names (3 characters or more) found in `text`, case-insensitive."""
    lowered = text.lower()
    return [n for n in {str(n) for n in names if n and len(str(n)) >= 3} if n.lower() in lowered]
