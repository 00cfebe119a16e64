"""The price-level attack: raw prices come back from a raw account, never from a rebased one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.probe.level_attack import CHANNELS, attack_levels, level_rates
from tradebench.probe.store import ProbeSet

RATIOS = ("state", "account", "fill")
"""The channels that are ratios of shown numbers (`one_lot` is the lot rule itself)."""


def _pairs(ds, n: int, seed: int) -> list[tuple[str, int]]:
    """`n` (member stock, day) pairs drawn from the second half of the calendar."""
    rng = np.random.default_rng(seed)
    panel = ds.panel
    out = []
    for pos in rng.integers(len(panel.dates) // 2, len(panel.dates) - 2, size=n):
        members = np.flatnonzero(panel.listed[pos] & panel.listed[pos - 1])
        out.append((str(panel.symbols[rng.choice(members)]), int(pos)))
    return out


def test_the_account_gives_raw_prices_back_only_under_raw_prices(cn_dataset_dir: Path) -> None:
    """On the real data: every channel recovers the price to the cent under raw prices;
    under rebased prices a channel hits only where the constant 100 hits too (a stock
    trading near 100), and what it recovers is the rebased level, not the raw one."""
    ds = load_dataset(cn_dataset_dir)
    results = attack_levels(ds, _pairs(ds, 40, 0))
    rates = level_rates(results).set_index(["price_mode", "channel"])
    for channel in RATIOS:
        raw, rebased = rates.loc[("raw", channel)], rates.loc[("rebased", channel)]
        assert raw["n"] >= 15 and raw["rate"] == 1.0 and raw["median_error"] < 1e-3
        assert rebased["n"] == raw["n"] and rebased["beyond_constant"] == 0
    lots = results[results["channel"] == "one_lot"].pivot_table(
        index=["symbol", "day"], columns="price_mode", values="hit"
    )
    assert (lots["raw"] == lots["rebased"]).all()  # the lot rule: the same in both frames
    rebased = results[results["price_mode"] == "rebased"]
    close = ds.panel.fields["close"]
    col = ds.panel.column_map
    days = {pd.Timestamp(d).date(): i for i, d in enumerate(ds.panel.dates)}
    for r in rebased[rebased["channel"].isin(("state", "account"))].itertuples():
        pos = days[r.day]
        level = 100 * close[pos, col[r.symbol]] / close[pos - 1, col[r.symbol]]
        # the rebased close, to the account grid's rounding (weights to 0.1%, units and
        # money to 0.1% of the capital)
        assert r.recovered == pytest.approx(level, rel=0.01)


def test_probe_levels_prints_the_table(
    synth_probe_file: Path, synth_probes: ProbeSet, tmp_path: Path
) -> None:
    out = tmp_path / "levels.parquet"
    args = ["probe", "levels", str(synth_probe_file), "-o", str(out), "--initial-cash", "1e9"]
    result = CliRunner().invoke(app, args)  # a book whose grid hides every lot
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(out)
    assert set(rows["price_mode"]) == {"raw", "rebased"} and set(rows["channel"]) == set(CHANNELS)
    ratios = rows[rows["channel"].isin(RATIOS)]
    assert ratios.loc[ratios["price_mode"] == "raw", "hit"].all()
    assert not (rows["hit"] & ~rows["constant_hit"])[rows["price_mode"] == "rebased"].any()
    assert "beyond" in result.output and "rebased" in result.output
    missing = CliRunner().invoke(app, ["probe", "levels", str(tmp_path / "none.jsonl")])
    assert missing.exit_code != 0 and "error:" in missing.output
    assert len(synth_probes.probes) == 20
