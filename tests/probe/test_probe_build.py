"""Probe sets: stratified seeded draw, gold labels that match the data, no leaks."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.leak_scan import find_leaks
from tradebench.data import load_dataset
from tradebench.probe.build import BuildConfig, build_probe_set
from tradebench.probe.sampling import allocate
from tradebench.probe.store import ProbeSet, read_probe_set, write_probe_set
from tradebench.view import MarketView


@pytest.fixture(scope="module")
def cn_probes(cn_dataset_dir: Path) -> ProbeSet:
    return build_probe_set(cn_dataset_dir, BuildConfig(n=40, seed=7))


def test_allocate_even_split_with_remainder():
    alloc = allocate(10, [100, 100, 100, 100])
    assert alloc.quotas == (3, 3, 2, 2) and alloc.counts == (3, 3, 2, 2)


def test_allocate_fills_short_strata_round_robin():
    alloc = allocate(12, [1, 0, 10, 10])
    assert alloc.quotas == (3, 3, 3, 3)
    assert alloc.counts == (1, 0, 6, 5)  # 2 + 3 missing, handed out in stratum order
    assert allocate(50, [2, 3]).counts == (2, 3)  # capacity caps the total


def test_gold_labels_match_the_dataset(cn_probes: ProbeSet, cn_dataset_dir: Path):
    ds = load_dataset(cn_dataset_dir)
    panel, header = ds.panel, cn_probes.header
    assert [np.datetime64(d) for d in header.calendar] == list(panel.dates)
    board_of = dict(zip(ds.instruments["symbol"], ds.instruments["board"], strict=True))
    bars = ds.bars.set_index(["symbol", "date"])
    for probe in cn_probes.probes:
        gold = probe.gold
        pos = gold.date_pos
        assert pd.Timestamp(panel.dates[pos]).date() == gold.date
        assert pd.Timestamp(panel.dates[pos + 1]).date() == gold.decision_day
        assert gold.board == board_of[gold.symbol] == probe.stratum_board
        assert gold.sector is None  # the real CN file has no sectors
        view = MarketView(ds, gold.decision_day)
        assert gold.symbol in set(view.members())
        assert probe.universe_size == int(view.member_mask().sum())
        raw = next(v for v in probe.variants if v.price_mode == "raw")
        snapshot = raw.calls[2]["result"]
        assert raw.calls[2]["tool"] == "get_stock_snapshot"
        assert snapshot["stock_id"] == raw.target_id != gold.symbol
        last = snapshot["bars"][-1]
        assert last["date"] == "day_-1"
        row = bars.loc[(gold.symbol, pd.Timestamp(gold.date))]
        assert last["close"] == round(float(row["close"]), 3)
        assert last["volume"] == float(row["volume"])
        rebased = next(v for v in probe.variants if v.price_mode == "rebased")
        assert rebased.calls[2]["result"]["bars"][-1]["close"] == 100.0


def test_draw_is_stratified_and_seeded(cn_probes: ProbeSet, cn_dataset_dir: Path):
    header = cn_probes.header
    counts = Counter((p.window, p.stratum_board) for p in cn_probes.probes)
    assert len(counts) == 20 and set(counts.values()) == {2}
    assert all(s.drawn == s.quota == 2 for s in header.strata)
    first = cn_probes.probes[:20]  # round-robin order: any prefix covers the strata
    assert len({(p.window, p.stratum_board) for p in first}) == 20
    for p in cn_probes.probes:
        lo, hi = header.windows[p.window]
        assert lo <= p.gold.date <= hi
    again = build_probe_set(cn_dataset_dir, BuildConfig(n=40, seed=7))
    assert again.probes == cn_probes.probes
    other = build_probe_set(cn_dataset_dir, BuildConfig(n=40, seed=8))
    assert [p.gold for p in other.probes] != [p.gold for p in cn_probes.probes]


def test_blinded_payloads_leak_no_symbol_or_date(cn_probes: ProbeSet, cn_dataset_dir: Path):
    panel = load_dataset(cn_dataset_dir).panel
    symbols = [str(s) for s in panel.symbols]
    for probe in cn_probes.probes:
        assert {v.level for v in probe.variants} == {"blinded"}
        for variant in probe.variants:
            text = json.dumps(variant.calls, ensure_ascii=False)
            assert find_leaks(text, symbols, panel.dates, True, True) == []
            assert probe.gold.symbol not in text and probe.gold.date.isoformat() not in text


def test_bright_payloads_do_leak(cn_dataset_dir: Path):
    """The audit's positive control: unmasked payloads show the real symbol and date."""
    probe_set = build_probe_set(
        cn_dataset_dir, BuildConfig(n=2, levels=("bright",), price_modes=("raw",))
    )
    panel = load_dataset(cn_dataset_dir).panel
    for probe in probe_set.probes:
        text = json.dumps(probe.variants[0].calls)
        found = find_leaks(text, [probe.gold.symbol], panel.dates, True, True)
        assert probe.gold.symbol in found and probe.gold.date.isoformat() in found


def test_short_strata_are_filled_and_reported(small_synth_dir: Path, tmp_path: Path):
    boards = ("main_sh", "main_sz", "chinext", "star", "beijing")  # no Beijing stock exists
    config = BuildConfig(n=25, seed=1, price_modes=("raw",), boards=boards)
    probe_set = build_probe_set(small_synth_dir, config)
    header = probe_set.header
    short = [s for s in header.strata if s.drawn < s.quota]
    assert [(s.board, s.available, s.drawn) for s in short] == [("beijing", 0, 0)] * 5
    assert sum(s.drawn for s in header.strata) == len(probe_set.probes) == 25
    assert Counter(s.drawn for s in header.strata if s.board != "beijing") == {1: 15, 2: 5}
    path = write_probe_set(probe_set, tmp_path / "p.jsonl")
    assert read_probe_set(path) == probe_set
