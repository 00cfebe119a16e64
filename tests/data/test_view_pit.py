"""The point-in-time gate: what a view shows at T never depends on data on or after T."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tradebench.data import Dataset, load_dataset
from tradebench.data.synth import SynthConfig, generate_frames
from tradebench.view import MarketView

FIELDS = (
    "open",
    "high",
    "low",
    "close",
    "adj_factor",
    "volume",
    "amount",
    "adj_open",
    "adj_close",
    "suspended",
    "listed",
)


@pytest.fixture(scope="module")
def small_market(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    from tradebench.data.assemble import assemble_dataset

    frames = generate_frames(SynthConfig(seed=7, n_names=40, n_days=160, index_size=30))
    out = tmp_path_factory.mktemp("small") / "ds"
    assemble_dataset(
        out,
        frames["bars"],
        market="cn",
        name="small",
        price_basis="raw_with_factor",
        sources=["test"],
        index=frames["index"],
        membership=frames["membership"],
    )
    return load_dataset(out)


def _perturbed(ds: Dataset, cut: pd.Timestamp, seed: int) -> Dataset:
    """Replace every bar and index value on or after `cut` with noise."""
    rng = np.random.default_rng(seed)
    bars = ds.bars.copy()
    late = (bars["date"] >= cut).to_numpy()
    for col in ("open", "high", "low", "close", "volume", "amount", "adj_factor"):
        bars.loc[late, col] = rng.uniform(1, 1000, size=late.sum())
    bars.loc[late, "suspended"] = rng.random(late.sum()) < 0.5
    index = ds.index.copy()
    late_idx = (index["date"] >= cut).to_numpy()
    for col in ("open", "high", "low", "close", "volume"):
        index.loc[late_idx, col] = rng.uniform(1, 1000, size=late_idx.sum())
    return replace(ds, bars=bars, index=index)


def _snapshot(view: MarketView) -> list[bytes]:
    out = [
        view.calendar.tobytes(),
        view.member_mask().tobytes(),
        view.members().astype(str).tobytes(),
    ]
    for f in FIELDS:
        out += [view.window(f).tobytes(), view.window(f, 5).tobytes(), view.last(f).tobytes()]
    for f in ("open", "high", "low", "close", "volume"):
        out.append(view.index_window(f).tobytes())
    for sym in view.symbols[:5]:
        for adjusted in (False, True):
            frame = view.history(str(sym), 10, adjusted=adjusted)
            out.append(frame.to_numpy(dtype=np.float64).tobytes() + frame.index.values.tobytes())
    out.append(str((view.last_day, view.next_trading_day(), view.is_trading_day())).encode())
    return out


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pos=st.integers(min_value=0, max_value=159), seed=st.integers(0, 2**16), shift=st.integers(0, 3)
)
def test_future_noise_leaves_view_unchanged(
    small_market: Dataset, pos: int, seed: int, shift: int
) -> None:
    dates = small_market.panel.dates
    cut = pd.Timestamp(dates[pos])
    as_of = cut + pd.Timedelta(days=0 if shift == 0 else -shift)  # T on or before the cut
    noisy = _perturbed(small_market, cut, seed)
    assert _snapshot(MarketView(small_market, as_of)) == _snapshot(MarketView(noisy, as_of))


def test_last_visible_bar_is_previous_day(small_market: Dataset) -> None:
    dates = small_market.panel.dates
    view = MarketView(small_market, dates[50])
    assert view.last_day == dates[49]
    assert view.window("close").shape[0] == 50
    assert view.day_index(dates[49]) == -1 and view.day_index(dates[53]) == 3
    assert view.next_trading_day() == dates[51]
    assert view.is_trading_day()


def test_windows_are_read_only_slices(small_market: Dataset) -> None:
    view = MarketView(small_market, small_market.panel.dates[30])
    win = view.window("close", 10)
    assert np.shares_memory(win, small_market.panel.fields["close"])
    with pytest.raises(ValueError):
        win[0, 0] = 1.0


def test_view_before_data_starts(small_market: Dataset) -> None:
    view = MarketView(small_market, "1990-01-01")
    assert view.window("close").shape[0] == 0
    assert view.last_day is None
    assert np.isnan(view.last("close")).all()


def test_membership_is_point_in_time(small_market: Dataset) -> None:
    m = small_market.membership
    for day in small_market.panel.dates[::20]:
        ts = pd.Timestamp(day)
        active = set(m.loc[(m["start"] <= ts) & (m["end"].isna() | (m["end"] > ts)), "symbol"])
        assert set(MarketView(small_market, day).members()) == active


def test_real_data_future_noise(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    for day in ("2023-06-01", "2024-01-02", "2024-07-15"):
        noisy = _perturbed(ds, pd.Timestamp(day), seed=1)
        assert _snapshot(MarketView(ds, day)) == _snapshot(MarketView(noisy, day))
