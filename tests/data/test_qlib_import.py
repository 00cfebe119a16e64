"""Qlib binary folders: export a dataset, read it back, and check Qlib's conventions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.data.dataset import Dataset
from tradebench.data.exporters.qlib import QlibExport, export_qlib, write_bin
from tradebench.data.importers.qlib import QlibImport, import_qlib, read_feature
from tradebench.data.synth import SynthConfig, synthesize
from tradebench.errors import DataError


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """A small synthetic market with suspensions and one membership reconstitution."""
    out = tmp_path_factory.mktemp("qsynth") / "ds"
    synthesize(out, SynthConfig(seed=3, n_names=14, n_days=150, index_size=8, suspend_rate=0.01))
    ds = load_dataset(out)
    assert ds.bars["suspended"].any() and ds.membership["end"].notna().any()
    return ds


def _members_by_day(membership: pd.DataFrame, days: pd.DatetimeIndex) -> set[tuple]:
    end = membership["end"].fillna(pd.Timestamp.max)
    return {
        (d, s)
        for d in days
        for s in membership.loc[(membership["start"] <= d) & (end > d), "symbol"]
    }


def _round_trip(ds: Dataset, tmp: Path, **export: object) -> Dataset:
    export_qlib(ds, QlibExport(out=tmp / "qlib", membership_universe="top", **export))
    import_qlib(
        QlibImport(
            source=tmp / "qlib",
            out=tmp / "back",
            membership_universe="top",
            index_symbol=ds.manifest.index_symbol,
        )
    )
    return load_dataset(tmp / "back")


def _assert_bars_equal(got: pd.DataFrame, want: pd.DataFrame) -> None:
    got = got.set_index(["symbol", "date"]).sort_index()
    want = want.set_index(["symbol", "date"]).sort_index()
    assert got.index.equals(want.index)
    for col in ("open", "high", "low", "close"):
        np.testing.assert_allclose(got[col], want[col], atol=1e-9)
    np.testing.assert_allclose(got["adj_factor"], want["adj_factor"], rtol=1e-6)
    np.testing.assert_allclose(got["volume"], want["volume"], rtol=1e-5)
    np.testing.assert_allclose(got["amount"], want["amount"], rtol=1e-6)
    assert (got["suspended"] == want["suspended"]).all()


def test_round_trip_flat_is_exact(synth: Dataset, tmp_path: Path) -> None:
    back = _round_trip(synth, tmp_path, suspended="flat")
    _assert_bars_equal(back.bars, synth.bars)
    days = pd.DatetimeIndex(np.unique(synth.bars["date"]))
    assert _members_by_day(back.membership, days) == _members_by_day(synth.membership, days)
    np.testing.assert_allclose(back.index["close"], synth.index["close"], rtol=1e-6)


def test_round_trip_nan_drops_only_suspended_bars(synth: Dataset, tmp_path: Path) -> None:
    back = _round_trip(synth, tmp_path)
    _assert_bars_equal(back.bars, synth.bars[~synth.bars["suspended"]])


def test_qlib_conventions(synth: Dataset, tmp_path: Path) -> None:
    """Adjusted prices, volume / factor, change as a fraction, NaN on suspended days."""
    result = export_qlib(synth, QlibExport(out=tmp_path / "q"))
    bars = synth.bars
    assert result.n_suspended_nan == int(bars["suspended"].sum())
    symbol = bars.loc[bars["suspended"], "symbol"].iloc[0]
    rows = bars[bars["symbol"] == symbol].sort_values("date").reset_index(drop=True)
    calendar = np.unique(bars["date"].to_numpy()).astype("datetime64[D]")
    folder = tmp_path / "q" / "features" / symbol.lower()
    fields = {f: read_feature(folder / f"{f}.day.bin", calendar)[1] for f in ("close", "volume")}
    change = read_feature(folder / "change.day.bin", calendar)[1]
    susp = rows["suspended"].to_numpy()
    adj = np.where(susp, np.nan, rows["close"] * rows["adj_factor"])
    assert np.isnan(fields["close"][susp]).all() and np.isnan(fields["volume"][susp]).all()
    np.testing.assert_allclose(fields["close"][~susp], adj[~susp], rtol=1e-6)
    shares = fields["volume"][~susp] * rows["adj_factor"].to_numpy()[~susp]
    np.testing.assert_allclose(shares, rows["volume"].to_numpy()[~susp], rtol=1e-5)
    last = pd.Series(adj).ffill().shift(1).to_numpy()
    np.testing.assert_allclose(change[1:], (adj / last - 1.0)[1:], rtol=1e-5, equal_nan=True)


def test_subset_of_symbols_and_dates(synth: Dataset, tmp_path: Path) -> None:
    symbols = tuple(sorted(synth.bars["symbol"].unique())[:3])
    result = export_qlib(
        synth, QlibExport(out=tmp_path / "q", symbols=symbols, start="2021-02-01", end="2021-03-31")
    )
    calendar = (tmp_path / "q" / "calendars" / "day.txt").read_text().split()
    assert calendar[0] == result.calendar_start >= "2021-02-01"
    assert calendar[-1] == result.calendar_end <= "2021-03-31"
    listed = (tmp_path / "q" / "instruments" / "all.txt").read_text().splitlines()
    assert [ln.split("\t")[0] for ln in listed] == list(symbols)
    members = (tmp_path / "q" / "instruments" / "csi300.txt").read_text().splitlines()
    assert {ln.split("\t")[0] for ln in members} <= set(symbols)
    raw = np.fromfile(tmp_path / "q" / "features" / symbols[0].lower() / "close.day.bin", "<f4")
    assert raw.size - 1 <= len(calendar)


def test_export_refuses_a_non_empty_folder(synth: Dataset, tmp_path: Path) -> None:
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "keep.txt").write_text("x")
    with pytest.raises(DataError, match="not empty"):
        export_qlib(synth, QlibExport(out=tmp_path / "q"))


def test_export_cli(synth: Dataset, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["data", "export", str(synth.path), "--format", "qlib", "-o", str(tmp_path / "q")]
    )
    assert result.exit_code == 0, result.output
    assert "wrote Qlib folder" in result.output
    assert (tmp_path / "q" / "instruments" / "csi300.txt").exists()
    bad = CliRunner().invoke(
        app, ["data", "export", str(synth.path), "--format", "csv", "-o", str(tmp_path / "c")]
    )
    assert bad.exit_code == 1 and "only `qlib`" in bad.output


def test_qlib_missing_calendar(tmp_path: Path) -> None:
    (tmp_path / "q").mkdir()
    with pytest.raises(DataError, match="is not a Qlib data folder"):
        import_qlib(QlibImport(source=tmp_path / "q", out=tmp_path / "ds"))


def test_qlib_feature_past_calendar(synth: Dataset, tmp_path: Path) -> None:
    root = tmp_path / "qlib"
    export_qlib(synth, QlibExport(out=root, end="2021-02-26"))
    sym = synth.bars["symbol"].iloc[0].lower()
    write_bin(root / "features" / sym / "close.day.bin", 25, np.ones(20))
    with pytest.raises(DataError, match="runs past the calendar"):
        import_qlib(QlibImport(source=root, out=tmp_path / "ds"))


def test_qlib_import_counts_symbols_and_says_what_it_imported(
    synth: Dataset, tmp_path: Path
) -> None:
    export_qlib(synth, QlibExport(out=tmp_path / "qlib", membership_universe="top"))
    listed = (tmp_path / "qlib" / "instruments" / "all.txt").read_text().splitlines()
    heard: list[tuple[str, int, int]] = []
    import_qlib(
        QlibImport(source=tmp_path / "qlib", out=tmp_path / "lib", membership_universe="top"),
        lambda phase, done, total: heard.append((phase, done, total)),
    )
    features = [(d, t) for p, d, t in heard if p == "reading features of all"]
    assert features == [(i, len(listed)) for i in range(len(listed) + 1)]  # symbol by symbol
    args = ["data", "import", str(tmp_path / "qlib"), "--format", "qlib", "-o"]
    result = CliRunner().invoke(app, [*args, str(tmp_path / "ds"), "--membership-universe", "top"])
    assert result.exit_code == 0, result.output
    back = load_dataset(tmp_path / "ds")
    days = sorted(back.bars["date"].dt.date.unique())
    members = len((tmp_path / "qlib" / "instruments" / "top.txt").read_text().splitlines())
    line = next(x for x in result.output.splitlines() if x.startswith("imported "))
    assert line.startswith(
        f"imported {len(back.bars):,} bars of {len(listed)} symbols, {days[0]} .. {days[-1]}, "
        f"{members} membership intervals, "
    )
