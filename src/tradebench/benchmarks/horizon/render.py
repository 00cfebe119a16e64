"""The prompt of a question, bright (real tickers, names and dates) or blinded.

A blinded prompt is the same question with every identity hidden: stocks become aliases
reshuffled per question (`tradebench.masking.build_masker`), dates become trading-day
labels relative to the month's first trading day, the month is not named (an opaque tag
keeps two blinded prompts from reading alike), closes are
multiplied by one seeded factor (their ratios stay, their level goes) and company names and
tickers inside headlines are replaced by the alias. A model cannot know a blinded answer
from memory, so its accuracy there must be at chance.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tradebench.benchmarks.horizon.questions import LETTERS, Question
from tradebench.data.dataset import Dataset
from tradebench.masking import MaskLevel, build_masker

_SUFFIX = re.compile(
    r"[,.]?\s+(inc|corp|corporation|co|company|ltd|limited|plc|group|holdings?|class [a-z])\.?$",
    re.IGNORECASE,
)
WHY = (
    "This is a memory test about past market data. No data is given: answer from what you "
    "remember, and guess if you do not know."
)


def _seed(question_id: str) -> int:
    return int.from_bytes(hashlib.sha256(question_id.encode()).digest()[:8], "little")


def _who(symbol: str, name: str) -> str:
    return f"{symbol} ({name})" if name else symbol


def name_forms(name: str) -> list[str]:
    """How a company name may appear in a headline: as listed, without its legal suffix,
    and its first word when that is distinctive (4+ letters)."""
    forms = [name] if name else []
    short = _SUFFIX.sub("", name).strip()
    while short and short not in forms:
        forms.append(short)
        short = _SUFFIX.sub("", short).strip()
    first = name.split()[0].strip(",.") if name else ""
    if len(first) >= 4 and first not in forms:
        forms.append(first)
    return forms


def _bright(q: Question) -> str:
    month = pd.Period(q.month, "M").strftime("%B %Y")
    if q.kind == "best_week":
        ask = (
            f"Which of these four stocks had the highest total return over the week from "
            f"Monday {q.dates[0]} to Friday {q.dates[1]} (from the last close before that "
            "Monday to the last close of that week)?"
        )
        opts = [_who(s, n) for s, n in zip(q.symbols, q.names, strict=True)]
    elif q.kind == "index_higher":
        ask = f"Did the index {q.symbols[0]} close higher on {q.dates[0]} than on {q.dates[1]}?"
        opts = list(q.options)
    elif q.kind == "close_of":
        who = _who(q.symbols[0], q.names[0])
        ask = f"Which of these was the closing price of {who} on {q.dates[0]}?"
        opts = list(q.options)
    else:
        who = _who(q.symbols[0], q.names[0])
        ask = f"Which of these headlines about {who} was published on {q.dates[0]} (UTC)?"
        opts = list(q.options)
    return _compose(f"Market: {month}.", ask, opts)


def _compose(header: str, ask: str, options: list[str]) -> str:
    lines = [WHY, "", header, ask, ""]
    lines += [f"{LETTERS[i]}. {text}" for i, text in enumerate(options)]
    letters = ", ".join(LETTERS[: len(options) - 1]) + f" or {LETTERS[len(options) - 1]}"
    return "\n".join([*lines, "", f"Reply with the letter of your answer only ({letters})."])


def _blinded(q: Question, calendar: np.ndarray, who: Identities) -> str:
    first = calendar[np.searchsorted(calendar, np.datetime64(f"{q.month}-01", "D"))]
    symbols = sorted(set(q.symbols) | (set(who.symbols) if q.kind == "headline" else set()))
    masker = build_masker("blinded", symbols, calendar, first, _seed(q.id), q.id)
    alias = masker.alias_of
    label = masker.day_label
    if q.kind == "best_week":
        days = calendar[
            (calendar >= np.datetime64(q.dates[0])) & (calendar <= np.datetime64(q.dates[1]))
        ]
        ask = (
            f"Which of these four stocks had the highest total return from the close before "
            f"{label(days[0])} to the close of {label(days[-1])}?"
        )
        opts = [alias[s] for s in q.symbols]
    elif q.kind == "index_higher":
        ask = f"Did the index close higher on {label(q.dates[0])} than on {label(q.dates[1])}?"
        opts = list(q.options)
    elif q.kind == "close_of":
        factor = float(np.exp(np.random.default_rng(_seed(q.id)).uniform(np.log(0.2), np.log(5))))
        ask = (
            f"Which of these was the closing price of {alias[q.symbols[0]]} on {label(q.dates[0])}?"
        )
        opts = [f"{float(v) * factor:.5g}" for v in q.options]  # 5 significant digits
    else:
        ask = (
            f"Which of these headlines about {alias[q.symbols[0]]} was published on "
            f"{label(q.dates[0])}?"
        )
        alias_ = alias[q.symbols[0]]
        opts = [_hide(t, q.symbols[0], q.names[0], alias_, masker, who) for t in q.options]
    tag = hashlib.sha256(f"blinded {q.id}".encode()).hexdigest()[:8]  # no two prompts alike
    header = (
        f"Question {tag}. Market: an unnamed month; days are counted in trading days from "
        "its first one."
    )
    return _compose(header, ask, opts)


def _hide(text: str, symbol: str, name: str, alias: str, masker: Any, who: Identities) -> str:
    for form in sorted([*name_forms(name), symbol], key=len, reverse=True):
        text = re.sub(rf"(?<![\w$]){re.escape(form)}(?!\w)", alias, text, flags=re.IGNORECASE)
    if who.names is not None:
        text = who.names.sub("a company", text)
    return masker.mask_text(text)


@dataclass(frozen=True)
class Identities:
    """Every company of a dataset, to hide from free text: its symbols (rewritten to
    aliases) and one pattern of every form of every name (rewritten to "a company")."""

    symbols: tuple[str, ...] = ()
    names: re.Pattern[str] | None = None


def identities(dataset: Dataset) -> Identities:
    """The `Identities` of a dataset's instruments."""
    frame = dataset.instruments
    forms = {f for n in frame["name"].dropna() for f in name_forms(str(n)) if len(f) >= 3}
    ordered = sorted(forms, key=len, reverse=True)
    names = "|".join(re.escape(f) for f in ordered)
    pattern = re.compile(rf"(?<![\w$])(?:{names})(?!\w)", re.IGNORECASE) if ordered else None
    return Identities(tuple(str(s) for s in frame["symbol"]), pattern)


def prompt(
    q: Question, level: MaskLevel, calendar: np.ndarray, who: Identities | None = None
) -> str:
    """The user message asking `q` at `level` (`bright` or `blinded`); `calendar` is the
    dataset's trading calendar (datetime64[D]), which relative day labels count on, and
    `who` the dataset's companies, hidden from blinded headlines (`identities`)."""
    return _bright(q) if level == "bright" else _blinded(q, calendar, who or Identities())
