"""The data attacker: with the price database, masked snapshots are found exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.data import load_dataset
from tradebench.probe.data_attacker import PriceDatabase, attack_all, observed
from tradebench.probe.results import score_attempts
from tradebench.probe.run import AttackConfig, run_attack
from tradebench.probe.store import ProbeSet


@pytest.fixture(scope="module")
def scored(synth_probes: ProbeSet, small_synth_dir: Path) -> pd.DataFrame:
    db = PriceDatabase.from_dataset(load_dataset(small_synth_dir))
    items = [(p, v) for p in synth_probes.probes for v in p.variants]
    return score_attempts(synth_probes, attack_all(db, items))


def _rows(scored: pd.DataFrame, attacker: str, mode: str) -> pd.DataFrame:
    return scored[(scored["attacker"] == attacker) & (scored["price_mode"] == mode)]


def test_finds_every_stock_and_date_on_raw_prices(scored: pd.DataFrame):
    for signal in ("levels", "returns", "volume", "combined"):
        rows = _rows(scored, f"data:{signal}", "raw")
        assert len(rows) == 20 and rows["valid"].all()
        assert rows["top1"].all(), signal
        assert (rows["date_distance"] == 0).all(), signal
        assert rows["sector_ok"].all() and rows["board_ok"].all()
        hits = rows.apply(lambda r: r["guess_tickers"][0] == r["gold_symbol"], axis=1)
        assert hits.all()


def test_rebasing_hides_price_and_volume_levels_but_not_returns(scored: pd.DataFrame):
    """Rebased payloads show volume in rebased units (amount / volume would be a raw
    price), so matching raw volume levels fails like matching price levels; the returns
    still find every stock and date."""
    assert _rows(scored, "data:returns", "rebased")["joint"].all()
    for signal in ("levels", "volume", "combined"):
        assert _rows(scored, f"data:{signal}", "rebased")["joint"].mean() < 0.5, signal


def test_observed_reads_the_snapshot_bars(synth_probes: ProbeSet):
    variant = synth_probes.probes[0].variants[0]
    obs = observed(variant)
    bars = variant.calls[2]["result"]["bars"]
    assert obs is not None and len(obs.log_close) == len(bars) == 10
    assert np.exp(obs.log_close[-1]) == pytest.approx(bars[-1]["close"])
    assert observed(variant, last=3).log_close.shape == (3,)


def test_run_writes_results_per_signal(synth_probe_file: Path, tmp_path: Path):
    config = AttackConfig(attacker="data:returns", price_modes=("rebased",), bars=3)
    outcome = run_attack(synth_probe_file, tmp_path, config)
    rows = pd.read_parquet(outcome.results)
    assert outcome.results.name == "results-data-returns-3.parquet"
    assert set(rows["attacker"]) == {"data:returns@3"} and len(rows) == 20
    assert rows["valid"].all() and (tmp_path / "summary.parquet").exists()


def test_market_context_alone_gives_the_date(scored: pd.DataFrame):
    rows = scored[scored["attacker"] == "data:context"]
    assert len(rows) == 40 and rows["valid"].all()
    assert (rows["date_distance"] == 0).all()
    assert not rows["top5"].any() and not rows["joint"].any()  # it names no stock
