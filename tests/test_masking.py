"""Masking: alias maps, relative days, round trips and the leak audit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.leak_scan import date_forms, find_leaks
from tradebench.errors import ToolError
from tradebench.masking import MASK_LEVELS, build_masker

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
    assert "asset_9999" in str(err.value)
    with pytest.raises(ToolError) as err2:
        m.unmask_symbol("SH600519")  # a real ticker is unknown under stock masking
    assert "SH600519" not in str(err2.value)


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
