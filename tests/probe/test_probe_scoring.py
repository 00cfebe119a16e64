"""Scoring on constructed replies: hits, misses, the ±7 trading-day edges, unparseable."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from tradebench.metrics.stats import wilson_interval
from tradebench.probe.attempt import Attempt
from tradebench.probe.results import score_attempts, summarise
from tradebench.probe.scoring import (
    calendar_position,
    date_window_probability,
    normalise_ticker,
    parse_guess,
    random_baselines,
    score_guess,
)
from tradebench.probe.store import ProbeSet
from tradebench.probe.types import AttackGuess, Gold, Probe, ProbeSetHeader

CAL = np.array(pd.bdate_range("2024-01-01", "2024-03-29").date, dtype="datetime64[D]")
GOLD_POS = 30
GOLD = Gold(
    symbol="SH600519",
    decision_day=CAL[GOLD_POS + 1].item(),
    date=CAL[GOLD_POS].item(),
    date_pos=GOLD_POS,
    sector="Consumer",
    board="main_sh",
)


def guess(tickers: list[str], day: date | str, sector: str = "consumer", board: str = "main_sh"):
    return AttackGuess(tickers=tickers, date=str(day), sector=sector, board=board)


def day_at(offset: int) -> date:
    return CAL[GOLD_POS + offset].item()


def test_exact_hit():
    s = score_guess(guess(["SH600519"], GOLD.date), GOLD, CAL)
    assert (s.top1, s.top5, s.date_distance, s.date_ok, s.joint) == (True, True, 0, True, True)
    assert s.sector_ok is True and s.board_ok is True


def test_top5_hit_top1_miss_and_normalised_forms():
    s = score_guess(guess(["SZ000001", "sz000002", "600519.SH"], GOLD.date), GOLD, CAL)
    assert (s.top1, s.top5, s.joint) == (False, True, True)
    assert score_guess(guess(["600519"], GOLD.date), GOLD, CAL).top1
    assert score_guess(guess(["sh 600519"], GOLD.date), GOLD, CAL).top1


def test_sixth_ticker_is_not_allowed_and_miss():
    with pytest.raises(ValueError):
        guess(["SZ000001"] * 5 + ["SH600519"], GOLD.date)
    s = score_guess(guess(["SZ000001", "SH600000"], GOLD.date, "Banks", "star"), GOLD, CAL)
    assert (s.top1, s.top5, s.joint, s.sector_ok, s.board_ok) == (False,) * 5


@pytest.mark.parametrize(
    ("offset", "hit"), [(-8, False), (-7, True), (-1, True), (1, True), (7, True), (8, False)]
)
def test_date_edges_in_trading_days(offset: int, hit: bool):
    s = score_guess(guess(["SH600519"], day_at(offset)), GOLD, CAL)
    assert s.date_distance == abs(offset)
    assert s.date_ok is hit and s.joint is hit and s.top5


def test_non_trading_days_count_as_the_next_trading_day():
    saturday = date(2024, 2, 10)
    assert calendar_position(CAL, saturday) == calendar_position(CAL, date(2024, 2, 12))
    assert calendar_position(CAL, date(2023, 12, 29)) == -1  # a weekday before the calendar
    assert calendar_position(CAL, date(2023, 12, 30)) == 0  # Saturday -> first trading day
    end = len(CAL) - 1  # Friday 2024-03-29
    assert calendar_position(CAL, date(2024, 4, 1)) == end + 1
    assert calendar_position(CAL, date(2024, 4, 10)) == end + 8


def test_unparseable_replies():
    ok = {"tickers": ["SH600519"], "date": "2024-02-13", "sector": "x", "board": "star"}
    assert parse_guess(ok) == AttackGuess(**ok)
    assert parse_guess(
        '{"tickers": ["SH600519"], "date": "2024-02-13", "sector": "x", "board": "star"}'
    ) == AttackGuess(**ok)
    bad = [
        "not json",
        '{"tickers": ["SH600519"]',
        ["SH600519"],
        {**ok, "date": "2024-02-30"},
        {**ok, "date": "13/02/2024"},
        {**ok, "tickers": []},
        {**ok, "board": "moon"},
        {k: v for k, v in ok.items() if k != "sector"},
        {**ok, "extra": 1},
    ]
    assert [parse_guess(b) for b in bad] == [None] * len(bad)


def test_normalise_ticker():
    assert normalise_ticker("600519.SS") == "SH600519"
    assert normalise_ticker("000001.sz") == "SZ000001"
    assert normalise_ticker("300750") == "SZ300750"
    assert normalise_ticker("Kweichow Moutai") == "KWEICHOWMOUTAI"
    assert normalise_ticker("aapl", market="us") == "AAPL"


def test_random_baselines_are_analytic():
    b = random_baselines(300, 50, 10, 109, n_sectors=10, n_boards=4, has_sector=True)
    assert b.top1 == pytest.approx(1 / 300) and b.top5 == pytest.approx(5 / 300)
    assert b.date == pytest.approx(15 / 100) and b.joint == pytest.approx(5 / 300 * 0.15)
    assert b.sector == pytest.approx(0.1) and b.board == 0.25
    assert date_window_probability(10, 10, 109) == pytest.approx(8 / 100)  # at the edge
    assert random_baselines(300, 50, 10, 109, 0, 4, has_sector=False).sector is None


def _probe_set() -> ProbeSet:
    header = ProbeSetHeader(
        dataset="x",
        dataset_name="x",
        market="cn",
        currency="CNY",
        calendar=list(CAL.tolist()),
        date_lo=0,
        date_hi=len(CAL) - 1,
        sectors=["Consumer", "Banks"],
        boards=["main_sh", "star"],
        n=3,
        seed=0,
        windows=[(CAL[0].item(), CAL[-1].item())],
        strata=[],
        levels=["blinded"],
        price_modes=["raw"],
        lookback=10,
        screen={},
    )
    probes = tuple(
        Probe(
            probe_id=f"p{i}",
            window=0,
            stratum_board="main_sh",
            universe_size=100,
            gold=GOLD,
            variants=[],
        )
        for i in range(3)
    )
    return ProbeSet(header, probes)


def test_failures_are_excluded_and_counted():
    base = {"level": "blinded", "price_mode": "raw", "attacker": "a"}
    attempts = [
        Attempt(probe_id="p0", guess=guess(["SH600519"], GOLD.date), **base),
        Attempt(probe_id="p1", guess=guess(["SZ000001"], day_at(8), "Banks"), **base),
        Attempt(probe_id="p2", failure="no_valid_reply", unreadable=3, **base),
    ]
    rows = score_attempts(_probe_set(), attempts)
    assert rows["valid"].tolist() == [True, True, False]
    assert rows["top1"].tolist()[:2] == [True, False] and pd.isna(rows["top1"].iloc[2])
    summary = summarise(rows).set_index("metric")
    assert set(summary["n_failed"]) == {1} and set(summary["n_valid"]) == {2}
    top1 = summary.loc["top1"]
    expected = wilson_interval(1, 2)
    assert (top1["successes"], top1["n"]) == (1, 2)
    assert (top1["rate"], top1["low"], top1["high"]) == (
        expected.estimate,
        expected.low,
        expected.high,
    )
    assert top1["random"] == pytest.approx(0.01)
    assert summary.loc["date ±7d", "successes"] == 1
    assert summary.loc["sector", "successes"] == 1 and summary.loc["sector", "n"] == 2
