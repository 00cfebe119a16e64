"""Qlib binary folder import: a round trip through a folder the test writes itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.data import load_dataset
from tradebench.data.importers.qlib import QlibImport, import_qlib
from tradebench.data.synth import SynthConfig, generate_frames
from tradebench.errors import DataError


def _write_bin(file: Path, start: int, values: np.ndarray) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    np.concatenate([[start], values]).astype("<f4").tofile(file)


def _write_qlib(root: Path, bars: pd.DataFrame) -> np.ndarray:
    """Write bars the way Qlib stores them: adjusted prices, adjusted volume, factor."""
    calendar = np.unique(bars["date"].to_numpy())
    (root / "calendars").mkdir(parents=True)
    (root / "calendars" / "day.txt").write_text(
        "\n".join(pd.Timestamp(d).strftime("%Y-%m-%d") for d in calendar) + "\n"
    )
    lines = []
    for symbol, g in bars.groupby("symbol"):
        start = int(np.searchsorted(calendar, g["date"].to_numpy()[0]))
        folder = root / "features" / symbol.lower()
        f = g["adj_factor"].to_numpy()
        for col in ("open", "high", "low", "close"):
            _write_bin(folder / f"{col}.day.bin", start, g[col].to_numpy() * f)
        _write_bin(folder / "volume.day.bin", start, g["volume"].to_numpy() / f)
        _write_bin(folder / "factor.day.bin", start, f)
        lines.append(
            f"{symbol}\t{pd.Timestamp(g['date'].iloc[0]).date()}\t"
            f"{pd.Timestamp(g['date'].iloc[-1]).date()}"
        )
    (root / "instruments").mkdir()
    (root / "instruments" / "all.txt").write_text("\n".join(lines) + "\n")
    (root / "instruments" / "top.txt").write_text("\n".join(lines[:5]) + "\n")
    return calendar


def test_qlib_round_trip(tmp_path: Path) -> None:
    frames = generate_frames(SynthConfig(seed=3, n_names=12, n_days=80, index_size=10))
    bars = frames["bars"]
    # contiguous per symbol (qlib stores one dense run per instrument)
    _write_qlib(tmp_path / "qlib", bars)
    import_qlib(
        QlibImport(source=tmp_path / "qlib", out=tmp_path / "ds", membership_universe="top")
    )
    ds = load_dataset(tmp_path / "ds")
    got = ds.bars.set_index(["symbol", "date"]).sort_index()
    want = bars.set_index(["symbol", "date"]).sort_index()
    assert got.index.equals(want.index)
    for col in ("open", "high", "low", "close"):
        np.testing.assert_allclose(got[col], want[col], atol=0.006)
    np.testing.assert_allclose(got["adj_factor"], want["adj_factor"], rtol=1e-6)
    np.testing.assert_allclose(got["volume"], want["volume"], rtol=1e-5)
    assert ds.membership["symbol"].nunique() == 5
    # inclusive qlib end date -> exclusive end: still a member on its last listed day
    last = ds.membership["end"] - pd.Timedelta(days=1)
    assert (last >= ds.membership["start"]).all()


def test_qlib_missing_calendar(tmp_path: Path) -> None:
    (tmp_path / "q").mkdir()
    with pytest.raises(DataError, match="is not a Qlib data folder"):
        import_qlib(QlibImport(source=tmp_path / "q", out=tmp_path / "ds"))


def test_qlib_feature_past_calendar(tmp_path: Path) -> None:
    frames = generate_frames(SynthConfig(seed=3, n_names=3, n_days=30, index_size=3))
    root = tmp_path / "qlib"
    _write_qlib(root, frames["bars"])
    sym = frames["bars"]["symbol"].iloc[0].lower()
    _write_bin(root / "features" / sym / "close.day.bin", 25, np.ones(20))
    with pytest.raises(DataError, match="runs past the calendar"):
        import_qlib(QlibImport(source=root, out=tmp_path / "ds"))
