"""Import of the real shared CN and US files, with spot checks against known values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.data import load_dataset
from tradebench.data.importers.long import LongImport, import_long
from tradebench.view import MarketView


def _bar(ds, symbol: str, day: str) -> pd.Series:
    rows = ds.bars[(ds.bars["symbol"] == symbol) & (ds.bars["date"] == pd.Timestamp(day))]
    assert len(rows) == 1
    return rows.iloc[0]


def test_moutai_raw_close(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    assert ds.manifest.price_basis == "raw_with_factor"
    assert _bar(ds, "SH600519", "2023-12-29")["close"] == pytest.approx(1726.00, abs=1e-9)


def test_csi300_index_close(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    idx = ds.index[ds.index["date"] == pd.Timestamp("2023-12-29")]
    assert float(idx["close"].iloc[0]) == pytest.approx(3431.11, abs=0.01)
    view = MarketView(ds, "2024-01-02")
    assert view.index_window("close", 1)[0] == pytest.approx(3431.11, abs=0.01)


def test_membership_has_300_members(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    m = ds.membership
    day = pd.Timestamp("2024-01-02")
    active = (m["start"] <= day) & (m["end"].isna() | (m["end"] > day))
    assert int(active.sum()) == 300
    # The view's universe is the members that have bars; the finding lists the rest.
    members = MarketView(ds, day).members()
    no_bars = next(f for f in ds.manifest.findings if f.kind == "membership_no_bars")
    assert len(members) == 300 - len(set(m.loc[active, "symbol"]) - set(ds.bars["symbol"]))
    assert no_bars.count > 0
    assert "SH600519" in set(members)


def test_suspensions_are_flagged(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    susp = ds.bars[ds.bars["suspended"]]
    assert len(susp) > 0
    assert (susp["volume"] == 0).all()
    finding = next(f for f in ds.manifest.findings if f.kind == "suspension_filled")
    assert finding.count == len(susp)


def test_factor_glitch_sz000001_listed(shared_data: Path, tmp_path: Path) -> None:
    manifest = import_long(
        LongImport(
            source=shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
            out=tmp_path / "ds",
            symbols=("SZ000001", "SH600519"),
            start="2020-12-01",
            end="2021-01-31",
        )
    )
    glitch = next(f for f in manifest.findings if f.kind == "factor_glitch")
    assert "SZ000001@2020-12-31" in glitch.examples
    # rows are kept, never dropped
    ds = load_dataset(tmp_path / "ds")
    src = pd.read_parquet(
        shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
        filters=[("symbol", "==", "SZ000001")],
    )
    in_window = src[(src["date"] >= "2020-12-01") & (src["date"] <= "2021-01-31")]
    assert len(ds.bars[ds.bars["symbol"] == "SZ000001"]) == len(in_window)


def test_us_adjusted_close(us_dataset_dir: Path) -> None:
    ds = load_dataset(us_dataset_dir)
    assert ds.manifest.price_basis == "adjusted"
    assert ds.manifest.market == "us" and ds.manifest.currency == "USD"
    assert _bar(ds, "AAPL", "2022-12-30")["close"] == pytest.approx(128.12, abs=0.005)
    assert (ds.bars["adj_factor"] == 1.0).all()
    assert ds.manifest.index_symbol == "SPY"
    assert "SPY" not in set(ds.bars["symbol"])
    aapl = ds.symbol_bars("AAPL", "2022-12-01", "2022-12-31")
    assert aapl.index.name == "date" and list(aapl.columns)[:4] == ["open", "high", "low", "close"]


def test_boards_follow_codes(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    boards = dict(zip(ds.instruments["symbol"], ds.instruments["board"], strict=True))
    assert boards["SH600519"] == "main_sh"
    assert boards["SZ000001"] == "main_sz"
    assert all(b == "chinext" for s, b in boards.items() if s.startswith("SZ30"))
    assert all(b == "star" for s, b in boards.items() if s.startswith("SH688"))
    view = MarketView(ds, "2024-01-02")
    pct = dict(zip(view.symbols, view.limit_pct, strict=True))
    assert pct["SH600519"] == 0.10
    assert np.isin(view.limit_pct, [0.10, 0.20]).all()
