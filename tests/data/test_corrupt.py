"""Corrupt or invalid inputs give the documented, named error, never a pandas traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tradebench.data import load_dataset
from tradebench.data.dataset import sha256_file
from tradebench.data.importers.long import LongImport, import_long
from tradebench.errors import DataError, DatasetCorruptError


@pytest.fixture()
def dataset(synth_dataset_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    shutil.copytree(synth_dataset_dir, out)
    return out


def _source(tmp_path: Path) -> pd.DataFrame:
    days = pd.bdate_range("2024-01-01", periods=5)
    return pd.DataFrame(
        {
            "date": list(days) * 2,
            "symbol": ["SH600000"] * 5 + ["SZ000002"] * 5,
            "open": 10.0,
            "high": 10.5,
            "low": 9.5,
            "close": 10.2,
            "volume": 1e6,
        }
    )


def _import(frame: pd.DataFrame, tmp_path: Path) -> None:
    src = tmp_path / "bars.csv"
    frame.to_csv(src, index=False)
    import_long(LongImport(source=src, out=tmp_path / "out", market="cn", prices="raw"))


def test_truncated_parquet(dataset: Path) -> None:
    file = dataset / "bars.parquet"
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with pytest.raises(DatasetCorruptError, match=r"bars\.parquet.*(checksum|truncated)"):
        load_dataset(dataset)
    with pytest.raises(DatasetCorruptError, match=r"bars\.parquet is not readable Parquet"):
        load_dataset(dataset, verify=False)


def test_checksum_mismatch(dataset: Path) -> None:
    file = dataset / "index.parquet"
    table = pq.read_table(file)
    pq.write_table(table.slice(0, table.num_rows - 1), file)
    with pytest.raises(DatasetCorruptError, match=r"index\.parquet fails its checksum"):
        load_dataset(dataset)


def test_missing_column(dataset: Path) -> None:
    file = dataset / "bars.parquet"
    pq.write_table(pq.read_table(file).drop(["close"]), file)
    manifest = json.loads((dataset / "manifest.json").read_text())
    manifest["files"]["bars"]["sha256"] = sha256_file(file)
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetCorruptError, match=r"lacks columns \['close'\]"):
        load_dataset(dataset)


def test_missing_manifest(dataset: Path) -> None:
    (dataset / "manifest.json").unlink()
    with pytest.raises(DatasetCorruptError, match="not a tradebench dataset"):
        load_dataset(dataset)


def test_garbage_manifest(dataset: Path) -> None:
    (dataset / "manifest.json").write_text("{not json")
    with pytest.raises(DatasetCorruptError, match="not a valid manifest"):
        load_dataset(dataset)


def test_nan_price_in_source(tmp_path: Path) -> None:
    frame = _source(tmp_path)
    frame.loc[3, "close"] = float("nan")
    with pytest.raises(DataError, match=r"NaN or non-positive prices, e\.g\. SH600000@2024-01-04"):
        _import(frame, tmp_path)


def test_non_positive_price_in_source(tmp_path: Path) -> None:
    frame = _source(tmp_path)
    frame.loc[7, "low"] = 0.0
    with pytest.raises(DataError, match="SZ000002@2024-01-03"):
        _import(frame, tmp_path)


def test_duplicate_rows_in_source(tmp_path: Path) -> None:
    frame = _source(tmp_path)
    frame = pd.concat([frame, frame.iloc[[2]]], ignore_index=True)
    with pytest.raises(
        DataError, match=r"duplicate \(symbol, date\) rows, e\.g\. SH600000@2024-01-03"
    ):
        _import(frame, tmp_path)


def test_missing_source_column(tmp_path: Path) -> None:
    frame = _source(tmp_path).drop(columns=["volume"])
    with pytest.raises(DataError, match=r"lacks required columns \['volume'\]"):
        _import(frame, tmp_path)


def test_unreadable_source(tmp_path: Path) -> None:
    src = tmp_path / "bars.parquet"
    src.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DataError, match="not readable as CSV/Parquet"):
        import_long(LongImport(source=src, out=tmp_path / "out"))


def test_clean_import_round_trips(tmp_path: Path) -> None:
    _import(_source(tmp_path), tmp_path)
    ds = load_dataset(tmp_path / "out")
    assert len(ds.bars) == 10
    assert ds.manifest.files["bars"].sha256 == sha256_file(tmp_path / "out" / "bars.parquet")
