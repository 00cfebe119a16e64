"""Identity and date masking at the agent boundary: pure functions over JSON-like data.

Mask levels are data: one `MaskLevelRow` per level in `MASK_TABLE` says what the level
hides, and everything that asks about a level reads its row. Four levels ship: `bright` (real
tickers, real dates), `stock_blind` (aliases, real dates), `date_blind` (real tickers,
relative day labels), `blinded` (both); adding one is one row. Aliases `asset_0001..`
are a seeded permutation per episode: stable within an episode, reshuffled across
episodes. Dates become `day_+N` relative to the episode's first decision day (history
`day_-N`), counted in trading days. Numbers pass through unchanged; only identifiers
and dates in strings and keys are rewritten, including inside error messages.

Identifiers are found by structure: `mask` replaces a string or dict key that is exactly a
symbol (an identifier field, a table cell, a listing item). Inside free text only forms that
cannot be ordinary words are rewritten: A-share codes in any of their written forms, tickers
that are not English words (`AAPL`), and any ticker written as `$T`, `NYSE:T` or `T.US`. A
ticker that reads as a word (`A`, `IT`, `ON`, `KEY`) is never rewritten inside prose, so
"A position earns" stays as it is; see `reads_as_word`.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import AfterValidator

from tradebench.errors import ToolError


@dataclass(frozen=True)
class MaskLevelRow:
    """One mask level: its name and what it hides from the agent."""

    name: str
    """The level's name in specs, episode ids and results."""
    hides_stocks: bool
    """Tickers become seeded aliases (`asset_0001`)."""
    hides_dates: bool
    """Dates become trading-day labels relative to the first decision day (`day_+3`)."""
    rebases_prices: bool
    """Prices are shown rebased (100 = the close before the episode) unless a benchmark's
    options set a price mode: a raw price level can name a stock."""
    in_default_grid: bool
    """Run when a spec omits `masks` (a level added later is opt-in, so a folder written
    before it still resumes with the same spec)."""
    description: str
    """One line for docs and reports."""


MASK_TABLE: dict[str, MaskLevelRow] = {
    row.name: row
    for row in (
        MaskLevelRow("bright", False, False, False, True, "real tickers, real dates"),
        MaskLevelRow("stock_blind", True, False, True, True, "aliases, real dates"),
        MaskLevelRow("date_blind", False, True, False, True, "real tickers, relative days"),
        MaskLevelRow("blinded", True, True, True, True, "aliases and relative days"),
    )
}
"""Every mask level, in display order: the one place a level is defined."""


MASK_LEVELS: tuple[str, ...] = tuple(MASK_TABLE)
"""The shipped levels (taken at import, for parametrised tests); code reads `mask_levels()`,
which follows rows added later."""


def mask_levels() -> tuple[str, ...]:
    """Every level's name, in display order."""
    return tuple(MASK_TABLE)


def default_mask_levels() -> tuple[str, ...]:
    """The levels a spec runs when it omits `masks`, in display order."""
    return tuple(name for name, row in MASK_TABLE.items() if row.in_default_grid)


def mask_level(name: str) -> MaskLevelRow:
    """The row of level `name`.

    Raises:
        ValueError: No such level (the known ones named).
    """
    row = MASK_TABLE.get(name)
    if row is None:
        raise ValueError(f"unknown mask level {name!r}; the levels are {', '.join(MASK_TABLE)}")
    return row


def _known_level(name: str) -> str:
    mask_level(name)
    return name


MaskLevel = Annotated[str, AfterValidator(_known_level)]
"""A mask level's name; pydantic fields of this type accept only levels of `MASK_TABLE`."""
ALIAS_RE = re.compile(r"\basset_(\d{4,})\b")
DAY_RE = re.compile(r"\bday_([+-]\d+)\b")
# ISO (2024-01-02), slashed (2024/01/02), dotted (2024.01.02), compact (20240102) forms. No
# digit may precede the year: checked once its first digit is read (`(?<!\d\d)`), which
# lets the search skip ahead to digits instead of trying a look-behind at every position.
DATE_RE = re.compile(r"(\d(?<!\d\d)\d{3})([-/.]?)(\d{2})\2(\d{2})(?!\d)")
TEXT_DATE_RE = re.compile(
    r"\b(?:(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}"
    r"|\d{1,2}\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?,?\s+\d{4}"
    r"|\d{4}年\d{1,2}月\d{1,2}日)"
)
MONTH_HINT = re.compile(r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?,?\s+\d")
"""What every `TEXT_DATE_RE` match holds unless it holds 年 (a month name before a number):
text with neither needs no `TEXT_DATE_RE` pass (these two looks are far cheaper; one
pattern with 年 as a second branch would lose the search's quick skip to month letters)."""
EXCHANGES = ("SH", "SZ", "BJ")
"""The exchange letters every A-share code form holds (`A_SHARE_FORM_RE`)."""
A_SHARE_CODE_RE = re.compile(r"(?:SH|SZ|BJ)\d{6}")
# Every way an A-share code is written (`SH600519`, `600519.SH`, `SH.600519`): matching this
# one shape and looking the code up is far cheaper than an alternation of every code.
A_SHARE_FORM_RE = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:SH|SZ|BJ)\.?\d{6}|\d{6}\.(?:SH|SZ|BJ))(?![A-Za-z0-9])"
)
CHINESE_DATE_RE = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日")
LETTER_SYMBOL_RE = re.compile(r"[A-Z][A-Z0-9]{0,9}(?:[.-][A-Z])?")
"""A ticker-shaped symbol: capitals and digits, maybe a share class (`BRK-B`)."""
# A ticker as free text writes it: bare (`AAPL`, `BRK.B`), as a cashtag (`$T`), after an
# exchange (`NYSE:T`) or with a country suffix (`T.US`). Matching this one shape and looking
# the symbol up is far cheaper than an alternation of every ticker. Snake-case tokens
# (`LIMIT_UP`, `asset_0001`) are single words, not tickers.
LETTER_FORM_RE = re.compile(
    r"(?<![A-Za-z0-9_$])"
    r"(?P<pre>\$|(?:NYSE|NASDAQ|AMEX|NYSEARCA|ARCA|BATS|CBOE):\s?)?"
    r"(?P<sym>[A-Z][A-Z0-9]{0,9}(?:[.-][A-Z])?)"
    r"(?P<suf>\.US)?"
    r"(?![A-Za-z0-9_])"
)
HAS_DIGIT = re.compile(r"\d").search
"""Finds a digit as the date and code patterns read one (`\\d`)."""
PLAIN = frozenset({float, int, bool, type(None)})
"""Payload types `mask` returns as they are (numbers, booleans, null)."""
MEMO_TEXTS = 4096
"""Masked free texts a masker remembers (a step's keys and short values repeat)."""
MEMO_CHARS = 1000
"""Texts longer than this (messages, prose) are masked afresh each time."""
SORTED_LABEL_SETS = 8
"""Symbol sets whose sorted labels a masker remembers (a step shows one or two)."""
WORDS_FILE = "masking_words.txt"
"""Package data: English words of 2-5 letters (12dicts 2of12; provenance in its header)."""


def hides_stocks(level: str) -> bool:
    """Whether a level replaces tickers with aliases."""
    return mask_level(level).hides_stocks


def hides_dates(level: str) -> bool:
    """Whether a level replaces dates with relative day labels."""
    return mask_level(level).hides_dates


def rebases_prices(level: str) -> bool:
    """Whether a level shows rebased prices when no price mode is set."""
    return mask_level(level).rebases_prices


def hides_anything(level: str) -> bool:
    """Whether a level rewrites anything at all (`bright` does not)."""
    return hides_stocks(level) or hides_dates(level)


def episode_seed(seed: int, episode_id: str) -> int:
    """A stable 64-bit seed from the run seed and an episode id (no Python `hash`)."""
    digest = hashlib.sha256(f"{seed}:{episode_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


UNKNOWN_ID = "unknown asset id: use the asset ids shown (asset_0001 style)"
"""The refusal of an id that is no alias of the episode. Like every refusal here it never
quotes what was sent: a message quoting the id, masked on its way out, would turn a real
ticker sent in into its alias."""
ID_FIELDS = frozenset({"stock_id", "stock_ids"})
"""Argument fields that carry asset identifiers (one id or a list of ids)."""


@functools.cache
def english_words() -> frozenset[str]:
    """The bundled English words of 2-5 letters (lower case), read once."""
    text = resources.files("tradebench").joinpath(WORDS_FILE).read_text(encoding="ascii")
    return frozenset(w for w in text.splitlines() if w and not w.startswith("#"))


def reads_as_word(symbol: str) -> bool:
    """Whether a symbol could be an ordinary word in prose: any one-character symbol, and
    any symbol that is an English word whatever its case (`IT`, `ON`, `KEY`, `COST`).
    Such a symbol is masked only where the payload carries an identifier."""
    return len(symbol) == 1 or symbol.lower() in english_words()


@dataclass(frozen=True)
class TextForms:
    """How the identifiers of one symbol set are found inside free text."""

    a_share: bool = False
    """Some symbols are A-share codes: match their one code shape (`A_SHARE_FORM_RE`)."""
    letters: bool = False
    """Some symbols are ticker-shaped: match the ticker shape (`LETTER_FORM_RE`)."""
    bare: frozenset[str] = frozenset()
    """Ticker-shaped symbols that are no word, so rewritten where prose writes them bare."""
    other: re.Pattern[str] | None = None
    """The written forms of symbols of any other shape that are no word."""
    digits_only: bool = False
    """Every symbol holds a digit (A-share codes): digit-free text needs no look (a digit as
    `HAS_DIGIT` finds it, the same `\\d` every date and code pattern matches)."""


@functools.lru_cache(maxsize=16)
def text_forms(symbols: tuple[str, ...]) -> TextForms:
    """The free-text plan of a symbol set (cached: episodes of one dataset share it)."""
    a_share = [s for s in symbols if A_SHARE_CODE_RE.fullmatch(s)]
    letters = [
        s for s in symbols if not A_SHARE_CODE_RE.fullmatch(s) and LETTER_SYMBOL_RE.fullmatch(s)
    ]
    known = set(a_share) | set(letters)
    rest = [s for s in symbols if s not in known and not reads_as_word(s)]
    other = None
    if rest:
        forms = sorted({f for s in rest for f in code_forms(s)}, key=len, reverse=True)
        other = re.compile(
            r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, forms)) + r")(?![A-Za-z0-9])"
        )
    return TextForms(
        a_share=bool(a_share),
        letters=bool(letters),
        bare=frozenset(s for s in letters if not reads_as_word(s)),
        other=other,
        digits_only=bool(symbols) and all(HAS_DIGIT(s) is not None for s in symbols),
    )


@dataclass(frozen=True)
class Masker:
    """One episode's alias and date maps plus the level that says which to apply."""

    level: MaskLevel
    alias_of: dict[str, str]
    symbol_of: dict[str, str]
    calendar: np.ndarray  # datetime64[D], the dataset's trading calendar
    origin: int  # calendar position of the episode's first decision day
    forms: TextForms = field(default_factory=TextForms, repr=False)
    """Where identifiers hide in free text (see `text_forms`)."""
    _sorted_labels: dict[frozenset[str], tuple[str, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _text_memo: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Free texts already masked (short ones: keys, field values), since a step's tool
    results repeat the same keys and words many times."""
    _value_memo: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Payload strings already masked (`_mask_value`: an alias or masked free text)."""

    _stocks: bool = field(init=False, repr=False, compare=False)
    """Whether this level hides stocks (`hides_stocks`), read once."""
    _dates: bool = field(init=False, repr=False, compare=False)
    """Whether this level hides dates (`hides_dates`), read once."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stocks", hides_stocks(self.level))
        object.__setattr__(self, "_dates", hides_dates(self.level))

    # ---------------------------------------------------------------- outgoing
    def mask(self, payload: Any) -> Any:
        """Mask a JSON-like payload by structure: a string or dict key that is exactly a
        symbol becomes its alias; any other string is free text (`mask_text`); numbers are
        unchanged."""
        if not hides_anything(self.level):
            return payload
        return self._masked(payload)

    def _masked(self, payload: Any) -> Any:
        """`mask` below the level check; the exact built-in types first (the bulk of a tool
        result), any other type by the same rules through `isinstance`."""
        kind = type(payload)
        if kind is str:
            return self._mask_value(payload)
        if kind in PLAIN:
            return payload
        if kind is dict:  # keys and short values are mostly remembered: look them up here
            memo, out = self._value_memo, {}
            for k, v in payload.items():
                if type(k) is str:
                    key = memo.get(k)
                    if key is None:
                        key = self._mask_value(k)
                else:
                    key = self._masked(k)
                if type(v) is str:
                    shown = memo.get(v)
                    out[key] = self._mask_value(v) if shown is None else shown
                else:
                    out[key] = v if type(v) in PLAIN else self._masked(v)
            return out
        if kind is list or kind is tuple:
            return [v if type(v) in PLAIN else self._masked(v) for v in payload]
        if isinstance(payload, str):
            return self._mask_value(payload)
        if isinstance(payload, dict):
            return {self._masked(k): self._masked(v) for k, v in payload.items()}
        if isinstance(payload, list | tuple):
            return [self._masked(v) for v in payload]
        if isinstance(payload, date | pd.Timestamp | np.datetime64):
            return self.mask_text(str(pd.Timestamp(payload).date()))
        return payload

    def _mask_value(self, value: str) -> str:
        """A string that is exactly a symbol is an identifier; anything else is free text.
        Short values are remembered (`MEMO_CHARS`): keys and words repeat in every result."""
        memo = self._value_memo
        out = memo.get(value)
        if out is not None:
            return out
        alias = self.alias_of.get(value) if self._stocks else None
        out = alias if alias is not None else self.mask_text(value)
        if len(value) <= MEMO_CHARS and type(value) is str:
            if len(memo) >= MEMO_TEXTS:
                memo.clear()
            memo[value] = out
        return out

    def mask_text(self, text: str) -> str:
        """Rewrite identifiers and dates inside free text: only identifier forms that cannot
        be ordinary words (see the module docstring); a word-like ticker stays as written."""
        if not (self._stocks or self._dates):
            return text
        if self.forms.digits_only and HAS_DIGIT(text) is None:
            return text  # every symbol and every date form holds a digit
        if len(text) > MEMO_CHARS or type(text) is not str:
            return self._rewrite(text)
        memo = self._text_memo
        out = memo.get(text)
        if out is None:
            if len(memo) >= MEMO_TEXTS:
                memo.clear()
            out = memo[text] = self._rewrite(text)
        return out

    def _rewrite(self, text: str) -> str:
        """`mask_text` without the memo: every pattern the level asks for, skipping one
        whose necessary letters the text lacks (`EXCHANGES`, `MONTH_HINT`)."""
        forms = self.forms
        if self._stocks:
            if forms.a_share and any(x in text for x in EXCHANGES):
                text = A_SHARE_FORM_RE.sub(self._code_sub, text)
            if forms.letters:
                text = LETTER_FORM_RE.sub(self._letter_sub, text)
            if forms.other is not None:
                text = forms.other.sub(self._code_sub, text)
        if self._dates:
            text = DATE_RE.sub(self._date_sub, text)
            if "年" in text or MONTH_HINT.search(text) is not None:
                text = TEXT_DATE_RE.sub(self._text_date_sub, text)
        return text

    def day_label(self, day: Any) -> str:
        """The label of a date under this level (ISO date when dates are visible)."""
        ts = pd.Timestamp(day)
        return self._label(ts) if self._dates else str(ts.date())

    def symbol_label(self, symbol: str) -> str:
        """The identifier of a symbol under this level."""
        return self.alias_of.get(symbol, symbol) if self._stocks else symbol

    def sorted_labels(self, symbols: frozenset[str]) -> tuple[str, ...]:
        """The identifiers of `symbols` under this level, sorted; remembered per set, since
        a point-in-time universe stays the same set for weeks of steps."""
        labels = self._sorted_labels.get(symbols)
        if labels is None:
            if len(self._sorted_labels) >= SORTED_LABEL_SETS:
                self._sorted_labels.clear()
            labels = tuple(sorted(self.symbol_label(s) for s in symbols))
            self._sorted_labels[symbols] = labels
        return labels

    def _code_sub(self, m: re.Match[str]) -> str:
        form = m.group(0)
        return self.alias_of.get(self._code_of(form), form)

    def _letter_sub(self, m: re.Match[str]) -> str:
        """A ticker-shaped token: its alias when it is a known symbol written in a ticker
        form (`$T`, `NYSE:T`, `T.US`) or bare and no word; otherwise the token as written."""
        symbol = m.group("sym")
        if symbol not in self.alias_of and len(symbol) > 2 and symbol[-2] in ".-":
            other = symbol[:-2] + ("-" if symbol[-2] == "." else ".") + symbol[-1]
            symbol = other if other in self.alias_of else symbol  # BRK.B is BRK-B
        alias = self.alias_of.get(symbol)
        if alias is None:
            return m.group(0)
        if m.group("pre") or m.group("suf") or symbol in self.forms.bare:
            return alias
        return m.group(0)

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
        raise ToolError(UNKNOWN_ID)

    def unmask_day(self, label: str) -> np.datetime64:
        """Real date for `day_+N` (or an ISO date when dates are visible)."""
        m = DAY_RE.fullmatch(label.strip())
        if hides_dates(self.level):
            if m is None:
                raise ToolError("unknown day: use day_+N / day_-N labels")
            pos = self.origin + int(m.group(1))
            if not 0 <= pos < len(self.calendar):
                raise ToolError("that day is outside the data")
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
        if not hides_anything(self.level):
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
    return Masker(level, alias_of, symbol_of, cal, origin, text_forms(tuple(ordered)))
