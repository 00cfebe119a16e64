"""Masking: alias maps, relative days, round trips and the leak audit."""

from __future__ import annotations

import re
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from tests.leak_scan import date_forms, find_leaks
from tradebench.errors import ToolError
from tradebench.masking import MASK_LEVELS, WORDS_FILE, build_masker, reads_as_word

SYMBOLS = ["SH600519", "SZ000001", "SZ300750", "SH688981", "SH600000"]
CAL = pd.bdate_range("2024-01-02", periods=60).values.astype("datetime64[D]")


def masker(level: str, seed: int = 0, episode: str = "ep1"):
    return build_masker(level, SYMBOLS, CAL, "2024-02-01", seed, episode)


def test_aliases_stable_within_episode_and_reshuffled_across() -> None:
    a, b = masker("blinded"), masker("blinded")
    assert a.alias_of == b.alias_of
    assert sorted(a.alias_of.values()) == [f"asset_{i:04d}" for i in range(1, 6)]
    maps = {tuple(sorted(masker("blinded", seed=s).alias_of.items())) for s in range(8)}
    assert len(maps) > 1  # the run seed reshuffles
    # the episode id reshuffles too, at a fixed run seed (5! maps: 8 ids give several)
    by_episode = {
        tuple(sorted(masker("blinded", seed=0, episode=f"ep{i}").alias_of.items()))
        for i in range(8)
    }
    assert len(by_episode) > 1


def test_relative_days() -> None:
    m = masker("date_blind")
    origin = int(np.searchsorted(CAL, np.datetime64("2024-02-01")))
    assert m.day_label("2024-02-01") == "day_+0"
    assert m.day_label(CAL[origin - 3]) == "day_-3"
    assert m.day_label(CAL[origin + 2]) == "day_+2"
    assert m.unmask_day("day_+2") == CAL[origin + 2]
    with pytest.raises(ToolError):
        m.unmask_day("2024-02-05")


@pytest.mark.parametrize("level", MASK_LEVELS)
def test_mask_payload_by_level(level: str) -> None:
    m = masker(level)
    payload = {
        "SH600519": {"close": 1726.0, "as_of": "2024-02-01", "note": "SZ000001 fell on 20240131"},
        "rows": [["2024/01/31", "SH688981", 3.5], "Jan 31, 2024 was calm"],
        "board": "main_sh",
    }
    text = str(m.mask(payload))
    leaks = find_leaks(
        text,
        SYMBOLS,
        CAL,
        stocks=level in ("stock_blind", "blinded"),
        dates=level in ("date_blind", "blinded"),
    )
    assert leaks == []
    assert "1726.0" in text and "main_sh" in text  # numbers and boards unchanged
    if level == "bright":
        assert m.mask(payload) == payload


@pytest.mark.parametrize("level", ["date_blind", "blinded"])
def test_every_written_date_form_is_hidden(level: str) -> None:
    m = masker(level)
    days = [CAL[0], CAL[29], CAL[-1]]
    text = " | ".join(f for d in days for f in date_forms(pd.Timestamp(d).date()))
    assert len(find_leaks(text, SYMBOLS, CAL, False, True)) == 9 * len(days)  # the audit sees
    assert find_leaks(m.mask_text(text), SYMBOLS, CAL, False, True) == []


def test_every_written_code_form_is_hidden() -> None:
    m = masker("stock_blind")
    text = "; ".join(f"{s} and {s[2:]}.{s[:2]}" for s in SYMBOLS)
    assert len(find_leaks(text, SYMBOLS, CAL, True, False)) == 2 * len(SYMBOLS)
    masked = m.mask_text(text)
    assert find_leaks(masked, SYMBOLS, CAL, True, False) == [], masked


def test_unmask_round_trip_and_unknown_alias() -> None:
    m = masker("blinded")
    alias = m.alias_of["SH600519"]
    assert m.unmask_symbol(alias) == "SH600519"
    assert m.unmask({"orders": [{"stock_id": alias}]}) == {"orders": [{"stock_id": "SH600519"}]}
    with pytest.raises(ToolError) as err:
        m.unmask_symbol("asset_9999")
    with pytest.raises(ToolError) as err2:
        m.unmask_symbol("SH600519")  # a real ticker is unknown under stock masking
    assert str(err.value) == str(err2.value)  # quotes neither: nothing for the mask to rewrite
    assert "asset_9999" not in str(err.value) and "SH600519" not in str(err2.value)


def test_substrings_are_not_rewritten() -> None:
    m = masker("stock_blind")
    assert m.mask_text("XSH600519Y") == "XSH600519Y"
    assert m.mask_text("(SH600519)") == f"({m.alias_of['SH600519']})"


def test_eight_digit_non_dates_survive() -> None:
    m = masker("date_blind")
    assert m.mask_text("volume 12345678") == "volume 12345678"
    assert "day_" in m.mask_text("on 20240131")


def test_identifier_fields_unmask_by_structure_at_any_depth() -> None:
    m = masker("blinded")
    alias = {s: m.alias_of[s] for s in SYMBOLS}
    args = {
        "stock_id": alias["SH600519"],
        "stock_ids": [alias["SZ000001"], alias["SZ300750"]],
        "orders": [{"stock_id": alias["SH688981"], "side": "BUY", "reason": alias["SH600000"]}],
        "feature": "mom_20d",
    }
    real = m.unmask_ids(args)
    assert real["stock_id"] == "SH600519" and real["stock_ids"] == ["SZ000001", "SZ300750"]
    assert real["orders"][0]["stock_id"] == "SH688981" and real["feature"] == "mom_20d"
    assert real["orders"][0]["reason"] == alias["SH600000"]  # free text is not an id field
    with pytest.raises(ToolError) as err:
        m.unmask_ids({"orders": [{"stock_id": "asset_9999"}]})
    assert not find_leaks(str(err.value), SYMBOLS, CAL, True, True)
    assert masker("bright").unmask_ids(args) == args


# ------------------------------------------------------------ tickers that read as words
US = ["A", "T", "IT", "ON", "KEY", "COST", "AAPL", "NVDA", "MSFT", "BRK-B"]
PROSE = (
    "A position earns position x ln(next close / today's close). IT IS ON: the KEY COST, "
    "a T-bill and T+1 rules, LIMIT_UP and NOT_IN_UNIVERSE codes."
)


def us_masker(level: str = "stock_blind"):
    return build_masker(level, US, CAL, "2024-02-01", 0, "ep1")


@pytest.mark.parametrize("level", ["stock_blind", "blinded"])
def test_word_tickers_are_never_rewritten_inside_prose(level: str) -> None:
    m = us_masker(level)
    assert m.mask_text(PROSE) == PROSE
    assert m.mask({"note": PROSE, "rows": [PROSE]}) == {"note": PROSE, "rows": [PROSE]}


def test_word_tickers_are_replaced_where_the_payload_carries_an_identifier() -> None:
    m = us_masker()
    a = m.alias_of
    payload = {
        "stock_id": "T",
        "stock_ids": ["A", "IT", "AAPL"],
        "rows": [["ON", "main", 1.5], {"stock_id": "KEY", "board": "us"}],
        "correlation_60d": {"COST": {"A": 1.0}},
    }
    assert m.mask(payload) == {
        "stock_id": a["T"],
        "stock_ids": [a["A"], a["IT"], a["AAPL"]],
        "rows": [[a["ON"], "main", 1.5], {"stock_id": a["KEY"], "board": "us"}],
        "correlation_60d": {a["COST"]: {a["A"]: 1.0}},
    }
    assert m.symbol_label("A") == a["A"]
    assert m.mask("A ") == "A "  # only a value that is exactly the symbol is an identifier


def test_non_word_tickers_and_ticker_forms_are_masked_in_free_text() -> None:
    m = us_masker()
    a = m.alias_of
    error = "AAPL cannot BUY today; NVDA and MSFT.US moved, BRK.B and BRK-B too"
    assert m.mask_text(error) == (
        f"{a['AAPL']} cannot BUY today; {a['NVDA']} and {a['MSFT']} moved, "
        f"{a['BRK-B']} and {a['BRK-B']} too"
    )
    forms = "$T fell, NYSE:IT rose, NASDAQ: AAPL flat, A.US up, $COST down; T stays a letter"
    assert m.mask_text(forms) == (
        f"{a['T']} fell, {a['IT']} rose, {a['AAPL']} flat, {a['A']} up, {a['COST']} down; "
        "T stays a letter"
    )
    result = {"message": "AAPL hit its limit", "note": "$A is Agilent"}
    assert m.mask(result) == {
        "message": f"{a['AAPL']} hit its limit",
        "note": f"{a['A']} is Agilent",
    }
    assert m.mask_text("AAPLX, XAAPL, aapl and asset_0003") == "AAPLX, XAAPL, aapl and asset_0003"
    assert us_masker("date_blind").mask_text(error) == error  # tickers visible at date_blind
    assert us_masker("bright").mask({"stock_id": "T"}) == {"stock_id": "T"}


def test_the_word_source_is_the_bundled_list() -> None:
    path = resources.files("tradebench").joinpath(WORDS_FILE)
    lines = path.read_text(encoding="ascii").splitlines()
    header = [line for line in lines if line.startswith("#")]
    words = [line for line in lines if not line.startswith("#")]
    assert "2of12id.txt" in "\n".join(header) and "Copyright 2000 by Kevin Atkinson" in "\n".join(
        header
    )
    assert words == sorted(set(words)) and all(re.fullmatch("[a-z]{2,5}", w) for w in words)
    for word in ("it", "on", "all", "key", "keys", "cost", "low", "now", "has", "are", "cat"):
        assert reads_as_word(word.upper()), word
    for ticker in ("AAPL", "NVDA", "MSFT", "GOOGL", "BRK-B", "SH600519", "TSLA"):
        assert not reads_as_word(ticker), ticker
    assert all(reads_as_word(c) for c in "ACDFJKLOTVX")  # any one-letter symbol


@pytest.mark.parametrize("level", ["bright", "blinded"])
def test_sorted_labels_are_those_of_the_set_asked_for(level: str) -> None:
    """The memo behind `sorted_labels` (a universe's listing, every step) answers for the
    set passed, across more sets than it keeps and when sets come back."""
    m = masker(level)
    shown = m.alias_of if level == "blinded" else {s: s for s in SYMBOLS}
    subsets = [frozenset(SYMBOLS[i:j]) for i in range(5) for j in range(i + 1, 6)]  # 15
    for subset in subsets + subsets[::-1]:
        assert m.sorted_labels(subset) == tuple(sorted(shown[s] for s in subset))
