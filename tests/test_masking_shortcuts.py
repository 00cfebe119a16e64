"""The masker's shortcuts change no byte: what it writes equals every pattern applied in full.

`Masker.mask_text` remembers short texts, skips a pattern whose necessary letters a text
lacks and finds dates digit first; `Masker.mask` takes exact built-in types first. The
oracle here is the plain rule, written out again: every identifier and date pattern of the
level applied to every string (the date pattern in its original look-behind-first form),
and a payload walked by `isinstance` alone.
"""

from __future__ import annotations

import random
import re
from datetime import date
from enum import StrEnum
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tradebench.masking import (
    A_SHARE_FORM_RE,
    LETTER_FORM_RE,
    MASK_LEVELS,
    MEMO_TEXTS,
    TEXT_DATE_RE,
    Masker,
    build_masker,
    hides_dates,
    hides_stocks,
)

PLAIN_DATE_RE = re.compile(r"(?<!\d)(\d{4})([-/.]?)(\d{2})\2(\d{2})(?!\d)")
"""Dates as the masker first matched them (a look-behind before the year)."""
CN = ["SH600519", "SZ000001", "SZ300750", "BJ430047", "SH688981"]
US = ["AAPL", "BRK-B", "T", "IT", "NVDA", "X1Y"]
CAL = pd.bdate_range("2023-06-01", periods=260).values.astype("datetime64[D]")
FRAGMENTS = [
    "SH600519", "600519.SH", "SH.600519", "SZ000001", "000001.SZ", "BJ430047", "430047.BJ",
    "BJ.430047", "SH6005190", "XSH600519", "SH600000", "AAPL", "$T", "NYSE:T", "T.US", "BRK.B",
    "BRK-B", "IT", "NVDA", "X1Y", "SHARES", "CASH", "BJ", "SZ", "2024-01-31", "2024/01/31",
    "2024.01.31", "20240131", "120240131", "2024-01-311", "2024-02-30", "1900-01-01",
    "Jan 31, 2024", "January 5 2024", "31 Jan 2024", "5 Sept. 2023", "Market 5", "Mar",
    "March", "2024年1月31日", "2024年2月30日", "年",
    "\uff12\uff10\uff12\uff14-\uff10\uff11-\uff13\uff11",
    "\u00b2", "day_+3", "asset_0001", "0.1%", "1,000,000.00", "ret_5d", "weight 1.80%", " ",
    ", ", "; ", "(", ")", "\n", "-", ".", "/",
]  # fmt: skip


def plain_text(m: Masker, text: str) -> str:
    """Every pattern the level asks for, applied in full, no shortcut."""
    if hides_stocks(m.level):
        text = A_SHARE_FORM_RE.sub(m._code_sub, text)
        text = LETTER_FORM_RE.sub(m._letter_sub, text)
        if m.forms.other is not None:
            text = m.forms.other.sub(m._code_sub, text)
    if hides_dates(m.level):
        text = PLAIN_DATE_RE.sub(m._date_sub, text)
        text = TEXT_DATE_RE.sub(m._text_date_sub, text)
    return text


def plain_mask(m: Masker, payload: Any) -> Any:
    """A payload masked by structure through `isinstance` alone."""
    if m.level == "bright":
        return payload
    if isinstance(payload, str):
        alias = m.alias_of.get(payload) if hides_stocks(m.level) else None
        return alias if alias is not None else plain_text(m, payload)
    if isinstance(payload, dict):
        return {plain_mask(m, k): plain_mask(m, v) for k, v in payload.items()}
    if isinstance(payload, list | tuple):
        return [plain_mask(m, v) for v in payload]
    if isinstance(payload, date | pd.Timestamp | np.datetime64):
        return plain_text(m, str(pd.Timestamp(payload).date()))
    return payload


def texts(n: int, seed: int) -> list[str]:
    """`n` texts of 1-8 fragments, some repeated (the memo answers those)."""
    rng = random.Random(seed)
    out = [
        rng.choice(["", " ", ", "]).join(rng.choices(FRAGMENTS, k=rng.randint(1, 8)))
        for _ in range(n)
    ]
    return out + rng.choices(out, k=n // 4)


class Side(StrEnum):
    BUY = "BUY"
    CODE = "SH600519"


def payload(rng: random.Random) -> Any:
    """A tool-result-like payload: symbol keys and cells, free text, numbers, dates."""
    text = rng.choice(FRAGMENTS) + " " + rng.choice(FRAGMENTS)
    return {
        rng.choice(CN + US): {"close": 12.5, "note": text, "as_of": "2024-01-31"},
        "rows": [
            (rng.choice(CN), 3, np.float64(1.5), None, True),
            [Side.BUY, Side.CODE, date(2024, 1, 31), pd.Timestamp("2024-02-01")],
        ],
        "2024-01-31": np.datetime64("2024-01-30"),
        "count": rng.randint(0, 9),
        "text": "".join(rng.choices(FRAGMENTS, k=5)),
    }


@pytest.mark.parametrize("level", MASK_LEVELS)
@pytest.mark.parametrize("symbols", [CN, US, CN + US], ids=["cn", "us", "mixed"])
def test_mask_text_equals_every_pattern_in_full(level: str, symbols: list[str]) -> None:
    m = build_masker(level, symbols, CAL, "2024-01-02", 0, "shortcuts")
    corpus = texts(MEMO_TEXTS + 600, seed=len(symbols))  # past the memo's size: it clears
    for text in corpus:
        assert m.mask_text(text) == plain_text(m, text), text
    changed = sum(plain_text(m, t) != t for t in corpus)
    if level != "bright":  # the corpus does carry identifiers and dates to rewrite
        assert changed > len(corpus) // 4


@pytest.mark.parametrize("level", MASK_LEVELS)
@pytest.mark.parametrize("symbols", [CN, US], ids=["cn", "us"])
def test_mask_payload_equals_the_plain_walk(level: str, symbols: list[str]) -> None:
    m = build_masker(level, symbols, CAL, "2024-01-02", 0, "shortcuts")
    rng = random.Random(7)
    for _ in range(300):
        value = payload(rng)
        assert m.mask(value) == plain_mask(m, value)
