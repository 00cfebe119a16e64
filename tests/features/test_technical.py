"""The technical features of the research tools: computed for a few columns (what a
snapshot or a comparison shows), each value is bit for bit the full table's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tradebench.data import load_dataset
from tradebench.data.dataset import Dataset
from tradebench.features.technical import FEATURES, FeatureTable, feature_table
from tradebench.view import MarketView


@pytest.fixture(scope="module")
def ds(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


def _bits(x: float) -> bytes:
    """A value's bytes, every NaN alike (a NaN is shown as null, whatever its sign)."""
    return b"nan" if np.isnan(x) else np.float64(x).tobytes()


def _days(ds: Dataset) -> list[np.datetime64]:
    """Days with short history (NaN features), part of the year, and a full year."""
    dates = ds.panel.dates
    return [dates[3], dates[16], dates[30], dates[70], dates[260], dates[-1]]


def test_rows_of_few_columns_are_the_full_tables_bits(ds: Dataset) -> None:
    checked = 0
    for day in _days(ds):
        view = MarketView(ds, day)
        full = feature_table(view)
        n = len(view.symbols)
        for cols in ([c] for c in range(0, n, 7)):  # one column: the summing-order trap
            (row,) = FeatureTable(view).rows(cols)
            for name in FEATURES:
                assert _bits(row[name]) == _bits(full[name][cols[0]]), (day, cols, name)
                checked += 1
        picks = list(range(5, n, 41))  # several at once, unsorted and repeated
        picks = picks[::-1] + picks[:2]
        for col, row in zip(picks, FeatureTable(view).rows(picks), strict=True):
            for name in FEATURES:
                assert _bits(row[name]) == _bits(full[name][col]), (day, col, name)
    assert checked > 500


def test_rows_read_features_already_computed_for_all(ds: Dataset) -> None:
    view = MarketView(ds, ds.panel.dates[200])
    full = feature_table(view)
    table = FeatureTable(view)
    assert np.array_equal(table["vol_20d"], full["vol_20d"], equal_nan=True)
    cols = [0, 17, 17, 250]
    rows = table.rows(cols)
    assert [list(r) for r in rows] == [list(FEATURES)] * len(cols)
    for col, row in zip(cols, rows, strict=True):
        assert [_bits(row[n]) for n in FEATURES] == [_bits(full[n][col]) for n in FEATURES]
    assert list(table) == list(FEATURES) and len(table) == len(FEATURES)
    assert "rsi_14" in table and "rsi_14" not in table._full and "x" not in table
    assert {name: table[name] for name in table}.keys() == full.keys()
    with pytest.raises(KeyError):
        table["no_such_feature"]
