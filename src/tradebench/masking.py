"""Identity and date masking at the agent boundary: pure functions over JSON-like data.

Four levels: `bright` (real tickers, real dates), `stock_blind` (aliases, real dates),
`date_blind` (real tickers, relative day labels), `blinded` (both). Aliases `asset_0001..`
are a seeded permutation per episode: stable within an episode, reshuffled across
episodes. Dates become `day_+N` relative to the episode's first decision day (history
`day_-N`), counted in trading days. Numbers pass through unchanged; only identifiers
and dates in strings and keys are rewritten, including inside error messages.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

import numpy as np
import pandas as pd

from tradebench.errors import ToolError

MaskLevel = Literal["bright", "stock_blind", "date_blind", "blinded"]
MASK_LEVELS: tuple[MaskLevel, ...] = ("bright", "stock_blind", "date_blind", "blinded")
ALIAS_RE = re.compile(r"\basset_(\d{4,})\b")
DAY_RE = re.compile(r"\bday_([+-]\d+)\b")
# ISO (2024-01-02), slashed (2024/01/02), dotted (2024.01.02), compact (20240102) forms
DATE_RE = re.compile(r"(?<!\d)(\d{4})([-/.]?)(\d{2})\2(\d{2})(?!\d)")
TEXT_DATE_RE = re.compile(
    r"\b(?:(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}"
    r"|\d{1,2}\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?,?\s+\d{4}"
    r"|\d{4}年\d{1,2}月\d{1,2}日)"
)
A_SHARE_CODE_RE = re.compile(r"(?:SH|SZ|BJ)\d{6}")
# Every way an A-share code is written (`SH600519`, `600519.SH`, `SH.600519`): matching this
# one shape and looking the code up is far cheaper than an alternation of every code.
A_SHARE_FORM_RE = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:SH|SZ|BJ)\.?\d{6}|\d{6}\.(?:SH|SZ|BJ))(?![A-Za-z0-9])"
)
CHINESE_DATE_RE = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日")


def hides_stocks(level: MaskLevel) -> bool:
    """Whether a level replaces tickers with aliases."""
    return level in ("stock_blind", "blinded")


def hides_dates(level: MaskLevel) -> bool:
    """Whether a level replaces dates with relative day labels."""
    return level in ("date_blind", "blinded")


def episode_seed(seed: int, episode_id: str) -> int:
    """A stable 64-bit seed from the run seed and an episode id (no Python `hash`)."""
    digest = hashlib.sha256(f"{seed}:{episode_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


ID_FIELDS = frozenset({"stock_id", "stock_ids"})
"""Argument fields that carry asset identifiers (one id or a list of ids)."""


@dataclass(frozen=True)
class Masker:
    """One episode's alias and date maps plus the level that says which to apply."""

    level: MaskLevel
    alias_of: dict[str, str]
    symbol_of: dict[str, str]
    calendar: np.ndarray  # datetime64[D], the dataset's trading calendar
    origin: int  # calendar position of the episode's first decision day
    _symbol_re: re.Pattern[str] | None = field(default=None, repr=False)
    digit_symbols: bool = False
    """True when every symbol holds a digit (A-share codes): digit-free text is skipped."""

    # ---------------------------------------------------------------- outgoing
    def mask(self, payload: Any) -> Any:
        """Mask every string (and dict key) in a JSON-like payload; numbers unchanged."""
        if self.level == "bright":
            return payload
        if isinstance(payload, str):
            return self.mask_text(payload)
        if isinstance(payload, dict):
            return {self.mask(k): self.mask(v) for k, v in payload.items()}
        if isinstance(payload, list | tuple):
            return [self.mask(v) for v in payload]
        if isinstance(payload, date | pd.Timestamp | np.datetime64):
            return self.mask_text(str(pd.Timestamp(payload).date()))
        return payload

    def mask_text(self, text: str) -> str:
        """Rewrite tickers and dates inside free text."""
        if self.digit_symbols and not any(c.isdigit() for c in text):
            return text  # every symbol and every date form holds a digit
        if hides_stocks(self.level) and self._symbol_re is not None:
            text = self._symbol_re.sub(self._symbol_sub, text)
        if hides_dates(self.level):
            text = DATE_RE.sub(self._date_sub, text)
            text = TEXT_DATE_RE.sub(self._text_date_sub, text)
        return text

    def day_label(self, day: Any) -> str:
        """The label of a date under this level (ISO date when dates are visible)."""
        ts = pd.Timestamp(day)
        return self._label(ts) if hides_dates(self.level) else str(ts.date())

    def symbol_label(self, symbol: str) -> str:
        """The identifier of a symbol under this level."""
        return self.alias_of.get(symbol, symbol) if hides_stocks(self.level) else symbol

    def _symbol_sub(self, m: re.Match[str]) -> str:
        form = m.group(0)
        return self.alias_of.get(self._code_of(form), form)

    def _code_of(self, form: str) -> str:
        """The dataset code of a written form (`600519.SH` and `SH.600519` are `SH600519`)."""
        if form not in self.alias_of and "." in form:
            left, right = form.split(".", 1)
            return right + left if left.isdigit() else left + right
        return form

    def _text_date_sub(self, m: re.Match[str]) -> str:
        text = m.group(0)
        chinese = CHINESE_DATE_RE.fullmatch(text)
        try:
            if chinese:
                ts = pd.Timestamp(*(int(g) for g in chinese.groups()))
            else:
                ts = pd.Timestamp(text.replace(".", ""))
        except ValueError:
            return text  # looks like a date but is none (e.g. 31 February)
        return self._label(ts)

    def _date_sub(self, m: re.Match[str]) -> str:
        try:
            ts = pd.Timestamp(int(m.group(1)), int(m.group(3)), int(m.group(4)))
        except ValueError:
            return m.group(0)  # not a date (e.g. an 8-digit number that is no valid day)
        lo, hi = self.calendar[0], self.calendar[-1]
        if (
            not lo - np.timedelta64(400, "D")
            <= np.datetime64(ts.date())
            <= hi + np.timedelta64(400, "D")
        ):
            return m.group(0)
        return self._label(ts)

    def _label(self, ts: pd.Timestamp) -> str:
        pos = int(np.searchsorted(self.calendar, np.datetime64(ts.date(), "D"), side="left"))
        offset = pos - self.origin
        return f"day_{offset:+d}"

    # ---------------------------------------------------------------- incoming
    def unmask_symbol(self, ident: str) -> str:
        """Real symbol for an identifier the model sent; a masked `ToolError` if unknown."""
        ident = ident.strip()
        if not hides_stocks(self.level):
            return ident
        if ident in self.symbol_of:
            return self.symbol_of[ident]
        raise ToolError(
            f"unknown asset id {ident!r}: use the asset ids shown (asset_0001 style)"
            if ALIAS_RE.fullmatch(ident)
            else "unknown asset id: use the asset ids shown"
        )

    def unmask_day(self, label: str) -> np.datetime64:
        """Real date for `day_+N` (or an ISO date when dates are visible)."""
        m = DAY_RE.fullmatch(label.strip())
        if hides_dates(self.level):
            if m is None:
                raise ToolError(f"unknown day {label!r}: use day_+N / day_-N labels")
            pos = self.origin + int(m.group(1))
            if not 0 <= pos < len(self.calendar):
                raise ToolError(f"day {label!r} is outside the data")
            return self.calendar[pos]
        return np.datetime64(pd.Timestamp(label).date(), "D")

    def unmask_ids(self, payload: Any, fields: frozenset[str] = ID_FIELDS) -> Any:
        """A payload with the value of every identifier field (`fields`, at any depth) turned
        into real symbols, strictly: an unknown id is a masked `ToolError`. Other values are
        left as the model wrote them."""
        if isinstance(payload, dict):
            return {
                k: self._unmask_id_value(v) if k in fields else self.unmask_ids(v, fields)
                for k, v in payload.items()
            }
        if isinstance(payload, list | tuple):
            return [self.unmask_ids(v, fields) for v in payload]
        return payload

    def _unmask_id_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [self.unmask_symbol(str(v)) for v in value]
        return self.unmask_symbol(str(value)) if isinstance(value, str) else value

    def unmask(self, payload: Any) -> Any:
        """Replace aliases and day labels in a JSON-like payload with real values."""
        if self.level == "bright":
            return payload
        if isinstance(payload, str):
            out = payload
            if hides_stocks(self.level):
                out = ALIAS_RE.sub(lambda m: self.symbol_of.get(m.group(0), m.group(0)), out)
            if hides_dates(self.level):
                out = DAY_RE.sub(lambda m: str(self.unmask_day(m.group(0))), out)
            return out
        if isinstance(payload, dict):
            return {k: self.unmask(v) for k, v in payload.items()}
        if isinstance(payload, list | tuple):
            return [self.unmask(v) for v in payload]
        return payload


def code_forms(symbol: str) -> list[str]:
    """How a code may be written: as in the dataset, and an A-share code also with its
    exchange after or before the digits (`600519.SH`, `SH.600519`)."""
    forms = [symbol]
    if len(symbol) == 8 and symbol[:2] in ("SH", "SZ", "BJ") and symbol[2:].isdigit():
        forms += [f"{symbol[2:]}.{symbol[:2]}", f"{symbol[:2]}.{symbol[2:]}"]
    return forms


def build_masker(
    level: MaskLevel,
    symbols: Iterable[str],
    calendar: np.ndarray,
    first_day: Any,
    seed: int,
    episode_id: str,
) -> Masker:
    """Build an episode's masker: a seeded alias permutation and the relative-day origin."""
    ordered = sorted({str(s) for s in symbols})
    rng = np.random.default_rng(episode_seed(seed, episode_id))
    perm = rng.permutation(len(ordered))
    width = max(4, len(str(len(ordered))))
    alias_of = {s: f"asset_{perm[i] + 1:0{width}d}" for i, s in enumerate(ordered)}
    symbol_of = {a: s for s, a in alias_of.items()}
    cal = np.asarray(calendar).astype("datetime64[D]")
    origin = int(np.searchsorted(cal, np.datetime64(pd.Timestamp(first_day).date(), "D")))
    pattern = None
    if ordered and all(A_SHARE_CODE_RE.fullmatch(s) for s in ordered):
        pattern = A_SHARE_FORM_RE  # one shape for every form; unknown codes are kept
    elif ordered:
        forms = {f for s in ordered for f in code_forms(s)}
        longest_first = sorted(forms, key=len, reverse=True)
        pattern = re.compile(
            r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, longest_first)) + r")(?![A-Za-z0-9])"
        )
    digits = all(any(c.isdigit() for c in s) for s in ordered)
    return Masker(level, alias_of, symbol_of, cal, origin, pattern, digits)
