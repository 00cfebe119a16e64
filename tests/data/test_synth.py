"""The synthetic market: deterministic per seed and shaped like an A-share market."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tradebench.data import load_dataset
from tradebench.data.boards import BOARD_RULES, board_of
from tradebench.data.stats import market_stats
from tradebench.data.synth import SynthConfig, generate_frames, synthesize


def test_same_seed_same_files(tmp_path: Path) -> None:
    cfg = SynthConfig(seed=11, n_names=30, n_days=100, index_size=20)
    a = synthesize(tmp_path / "a", cfg)
    b = synthesize(tmp_path / "b", cfg)
    assert {k: v.sha256 for k, v in a.files.items()} == {k: v.sha256 for k, v in b.files.items()}
    c = synthesize(tmp_path / "c", SynthConfig(seed=12, n_names=30, n_days=100, index_size=20))
    assert a.files["bars"].sha256 != c.files["bars"].sha256


def test_shape_boards_and_manifest(synth_dataset_dir: Path) -> None:
    ds = load_dataset(synth_dataset_dir)
    m = ds.manifest
    assert m.synthetic and m.seed == 0 and m.market == "cn"
    assert m.n_symbols >= 300
    assert ds.panel.dates.size >= 3 * 252 - 30
    boards = set(ds.instruments["board"])
    assert {"main_sh", "main_sz", "chinext", "star"} <= boards
    assert ds.instruments["sector"].notna().all()


def test_closes_respect_board_limits(synth_dataset_dir: Path) -> None:
    ds = load_dataset(synth_dataset_dir)
    bars = ds.bars.sort_values(["symbol", "date"])
    prev = bars.groupby("symbol")["close"].shift()
    # ex-dividend days drop the reference price, so compare with the adjusted previous close
    prev_factor = bars.groupby("symbol")["adj_factor"].shift()
    ref = prev * prev_factor / bars["adj_factor"]
    limit = bars["symbol"].map(lambda s: BOARD_RULES[board_of(s)].limit_pct)
    move = (bars["close"] / ref - 1).abs()
    ok = move.isna() | (move <= limit + 0.011 / ref)  # a tick of rounding at the limit price
    assert ok.all()
    hits = (move >= limit - 0.005) & move.notna()
    assert hits.sum() > 0  # limit moves do happen


def test_suspensions_and_listing(synth_dataset_dir: Path) -> None:
    ds = load_dataset(synth_dataset_dir)
    susp = ds.bars[ds.bars["suspended"]]
    assert len(susp) > 0 and (susp["volume"] == 0).all()
    assert (susp["open"] == susp["close"]).all() and (susp["high"] == susp["low"]).all()
    first = ds.bars.groupby("symbol")["date"].min()
    assert (first > first.min()).any()  # some names list mid-sample


def test_index_is_built_from_members(synth_dataset_dir: Path) -> None:
    ds = load_dataset(synth_dataset_dir)
    assert len(ds.index) == ds.panel.dates.size
    assert np.isfinite(ds.index["close"]).all()
    m = ds.membership
    day = pd.Timestamp(ds.panel.dates[300])
    active = (m["start"] <= day) & (m["end"].isna() | (m["end"] > day))
    assert active.sum() == 300


def test_calibrated_near_real_figures(synth_dataset_dir: Path) -> None:
    """Loose bands around the CSI300 2018-2026 figures documented in docs/datasets.md."""
    s = market_stats(load_dataset(synth_dataset_dir))
    assert 0.12 < s.index_vol < 0.28
    assert 0.30 < s.median_stock_vol < 0.50
    assert 0.015 < s.dispersion < 0.03
    assert 0.002 < s.limit_up_freq < 0.015
    assert 0.001 < s.suspended_frac < 0.01
    assert s.median_kurtosis > 1.0


def test_generate_is_pure() -> None:
    cfg = SynthConfig(seed=5, n_names=10, n_days=40, index_size=8)
    a, b = generate_frames(cfg), generate_frames(cfg)
    pd.testing.assert_frame_equal(a["bars"], b["bars"])
