"""The lot channel: whole lots give the raw price back unless the account grid hides them.

Under rebased prices one lot of a stock is `base` rebased units, `base` being its raw close
before the episode. An attacker who steps an order's size through `risk_check` finds the
smallest size that fills, and so the raw price. The account grid (0.1% of the initial
capital, docs/portfolio.md) hides a lot worth under half a grid step. The oracles here are
the documented rule and the raw data, not the converter's code:

- a lot is hidden when 100 x price < 0.0005 x capital, i.e. capital > 200,000 x price;
- a hidden lot leaves the smallest filling size the same for every stock;
- every quantity shown is a whole number of grid steps, a step being the units that
  0.1% of the capital buys at the rebase close (capital x 0.001 / 100).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.data import Dataset, load_dataset
from tradebench.probe.level_attack import attack_levels, shown_after_buy

DAY = "2024-06-03"
BIG_BOOK = 1e9
"""Hides the lot of every stock under CNY 5,000 (200,000 x 5,000)."""


def _stocks(ds: Dataset, pos: int, n: int) -> list[str]:
    """The dearest member stock that day and `n - 1` others spread over the price range."""
    panel = ds.panel
    close = panel.fields["close"][pos - 1]
    members = np.flatnonzero(panel.listed[pos] & panel.listed[pos - 1] & np.isfinite(close))
    ranked = members[np.argsort(-close[members])]
    picks = ranked[np.linspace(0, len(ranked) - 1, n).astype(int)]
    return [str(panel.symbols[c]) for c in picks]


@pytest.fixture(scope="module")
def ds(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


def _pos(ds: Dataset) -> int:
    return int(np.searchsorted(ds.panel.dates, np.datetime64(DAY)))


def test_order_sizes_give_the_raw_price_at_a_small_book(ds: Dataset) -> None:
    """At CNY 1M the lot of a dear stock is far above the grid: the smallest order that
    fills is its lot, and the price comes back (the channel is real: the check can fail)."""
    pos = _pos(ds)
    dear = _stocks(ds, pos, 2)[0]
    found = shown_after_buy(ds, pos, dear, "rebased", "blinded", initial_cash=1e6)
    assert found is not None
    shown, truth = found
    assert shown.lot_step is not None and shown.close_shown is not None
    recovered = shown.lot_step * shown.close_shown / 100
    assert recovered == pytest.approx(truth.close, rel=0.05)


def test_a_big_enough_book_hides_every_lot(ds: Dataset) -> None:
    """At a book above 200,000 x the dearest price the smallest filling size is the same
    for every stock, so it names none, and no price comes back from it."""
    pos = _pos(ds)
    stocks = _stocks(ds, pos, 8)
    dearest = float(ds.panel.fields["close"][pos - 1, ds.panel.column_map[stocks[0]]])
    assert 200_000 * dearest * 1.5 < BIG_BOOK  # the oracle's condition, with room
    steps, misses, judged = set(), 0, 0
    for symbol in stocks:
        found = shown_after_buy(ds, pos, symbol, "rebased", "blinded", initial_cash=BIG_BOOK)
        if found is None:  # the buy did not fill that day (a limit, a suspension)
            continue
        shown, truth = found
        judged += 1
        steps.add(shown.lot_step)
        recovered = shown.lot_step * shown.close_shown / 100
        misses += abs(recovered / truth.close - 1) > 0.05
    assert judged >= 6 and stocks[0] in str(stocks)
    assert len(steps) == 1, steps
    assert misses >= judged - 1  # at most a stock near the constant guess
    step = BIG_BOOK * 0.001 / 100
    assert steps.pop() == pytest.approx(step / 2, abs=1)  # half a grid step rounds up


def test_every_quantity_shown_is_whole_grid_steps(ds: Dataset) -> None:
    """Holdings, sellable amounts and the fill line are whole grid steps (no lot shows)."""
    pos = _pos(ds)
    step = BIG_BOOK * 0.001 / 100
    judged = 0
    for symbol in _stocks(ds, pos, 5):
        found = shown_after_buy(ds, pos, symbol, "rebased", "blinded", initial_cash=BIG_BOOK)
        if found is None:
            continue
        shown, _ = found
        judged += 1
        (position,) = shown.state["positions"]
        for value in (position["shares"], position["sellable"]):
            assert value is not None and value > 0
            assert value / step == pytest.approx(round(value / step), abs=1e-6), value
        assert round(shown.state["cash"] / (BIG_BOOK * 0.001), 6).is_integer()
        assert round(shown.state["nav"] / (BIG_BOOK * 0.001), 6).is_integer()
        # the memory-only account text and yesterday's fill line: the same grid
        money = re.search(r"cash CNY ([\d,.]+) \(.*?\); NAV CNY ([\d,.]+)", shown.user)
        assert money is not None, shown.user[:300]
        for text in money.groups():
            assert round(float(text.replace(",", "")) / (BIG_BOOK * 0.001), 6).is_integer()
        amounts = re.findall(r"^- \S+: ([\d,.]+) shares|filled ([\d,.]+) shares", shown.user, re.M)
        units = [float((a or b).replace(",", "")) for a, b in amounts]
        assert len(units) >= 2
        for value in units:
            assert value / step == pytest.approx(round(value / step), abs=1e-6), value
    assert judged >= 3


def test_the_attack_table_has_the_lot_channel(ds: Dataset) -> None:
    """`attack_levels` reports `lot_step`: at 1M under rebased prices the price of each of
    the three dearest stocks comes back (a lot of 20+ grid steps; a buy that did not fill
    that day has no row), at a big book none beyond the constant guess."""
    pos = _pos(ds)
    panel = ds.panel
    close = panel.fields["close"][pos - 1]
    members = np.flatnonzero(panel.listed[pos] & panel.listed[pos - 1] & np.isfinite(close))
    dearest = members[np.argsort(-close[members])][:3]
    assert (close[dearest] * 100 > 20 * 1e6 * 0.001).all()
    pairs = [(str(panel.symbols[c]), pos) for c in dearest]
    small = attack_levels(ds, pairs, price_modes=("rebased",), initial_cash=1e6)
    big = attack_levels(ds, pairs, price_modes=("rebased",), initial_cash=BIG_BOOK)
    lot_small = small[small["channel"] == "lot_step"]
    lot_big = big[big["channel"] == "lot_step"]
    assert len(lot_small) == len(lot_big) >= 2
    assert lot_small["hit"].all()
    assert not (lot_big["hit"] & ~lot_big["constant_hit"]).any()
    assert isinstance(lot_big, pd.DataFrame)


def test_a_run_says_which_capital_hides_every_lot(
    ds: Dataset, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning a spec gets at a small book names the capital (200,000 x the dearest
    rebase close of the window's universe), and a book that large gets none."""
    from tradebench.benchmarks.portfolio.capital import warn_if_lots_show
    from tradebench.market.rules import MarketRules
    from tradebench.runs.spec import Window

    window = Window(start=DAY, end="2024-06-10")
    pos = _pos(ds)
    panel = ds.panel
    members = panel.listed[pos] & panel.listed[pos - 1]
    dearest = float(np.nanmax(np.where(members, panel.fields["close"][pos - 1], np.nan)))
    with caplog.at_level("WARNING", logger="tradebench.runs"):
        warn_if_lots_show(ds, window, MarketRules.for_market("cn", initial_cash=1e6))
    (record,) = [r for r in caplog.records if "account grid" in r.getMessage()]
    assert f"{200_000 * dearest:,.0f}" in record.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="tradebench.runs"):
        warn_if_lots_show(ds, window, MarketRules.for_market("cn", initial_cash=BIG_BOOK))
    assert not [r for r in caplog.records if "account grid" in r.getMessage()]


def _one_two_five_at_least(value: float) -> float:
    """The first of 1, 2, 5, 10, 20, 50, ... x 10^6 not below `value` (the oracle's own
    walk up the series, not the code's logarithm)."""
    figure, steps = 1e6, (2.0, 2.5, 2.0)
    i = 0
    while figure < value:
        figure *= steps[i % 3]
        i += 1
    return figure


def _oracle_capital(shared_data: Path, first_day: str) -> float:
    """The documented default, from the source files: 2 x 200,000 x the dearest raw close
    (the file's adjusted close over its `factor`), on the trading day before `first_day`, of
    the stocks in the CSI300 that day, on the 1-2-5 series."""
    bars = pd.read_parquet(
        shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
        columns=["date", "symbol", "close", "factor"],
    )
    bars["close"] = bars["close"] / bars["factor"]
    bars["date"] = pd.to_datetime(bars["date"])
    day = pd.Timestamp(first_day)
    before = bars.loc[bars["date"] < day, "date"].max()
    members = pd.read_csv(shared_data / "universe" / "csi300_membership.csv")
    start, end = pd.to_datetime(members["opt-in"]), pd.to_datetime(members["opt-out"])
    inside = members.loc[(start <= day) & (end.isna() | (end > day)), "symbol"]
    closes = bars[(bars["date"] == before) & bars["symbol"].isin(inside)]["close"]
    return _one_two_five_at_least(2 * 200_000 * float(closes.max()))


def _spec(ds_dir: Path, agents: list[dict[str, object]], **options: object) -> object:
    from tradebench.runs.spec import RunSpec

    return RunSpec.model_validate(
        {
            "dataset": str(ds_dir),
            "benchmark": "portfolio",
            "windows": [{"start": DAY, "end": "2024-06-10"}],
            "modes": ["memory_only"],
            "masks": ["blinded"],
            "agents": agents,
            "options": options,
        }
    )


MODEL = {"name": "m", "provider": "openai", "model": "x", "base_url": "http://127.0.0.1:9/v1"}
BASELINE = {"name": "ew", "baseline": "equal_weight"}


def test_the_default_capital_hides_every_lot(
    ds: Dataset, cn_dataset_dir: Path, shared_data: Path, tmp_path: Path
) -> None:
    """A blinded model run that sets no capital gets the documented one, recorded in its
    spec.yaml; at it the price-level attack (every channel, the lot step included) gives no
    price back beyond the constant guess, for the dearest stocks and a spread of others."""
    from tradebench.benchmarks.portfolio.benchmark import BENCHMARK
    from tradebench.runs.executor import plan
    from tradebench.runs.spec import RunSpec

    expected = _oracle_capital(shared_data, DAY)
    assert expected == 1e9  # Moutai near CNY 1,600 before 2024-06-03
    planned = plan(BENCHMARK, _spec(cn_dataset_dir, [MODEL, BASELINE]), tmp_path / "run")
    assert planned.options.initial_cash == expected
    recorded = RunSpec.load(tmp_path / "run" / "spec.yaml")
    assert recorded.options["initial_cash"] == expected
    pos = _pos(ds)
    pairs = [(s, pos) for s in _stocks(ds, pos, 6)]
    found = attack_levels(ds, pairs, price_modes=("rebased",))
    assert set(found["initial_cash"]) == {expected}
    assert "lot_step" in set(found["channel"])
    assert len(found) >= 10
    assert not (found["hit"] & ~found["constant_hit"]).any(), found[found["hit"]]


def test_runs_without_a_rebased_model_keep_the_old_capital(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    """Baselines alone, or a model under raw prices: CNY 1,000,000, as before the rule (so
    baseline summaries and bright runs are unchanged)."""
    from tradebench.benchmarks.portfolio.benchmark import BENCHMARK
    from tradebench.runs.executor import plan

    alone = plan(BENCHMARK, _spec(cn_dataset_dir, [BASELINE]), tmp_path / "a")
    raw = plan(BENCHMARK, _spec(cn_dataset_dir, [MODEL], price_mode="raw"), tmp_path / "b")
    assert alone.options.initial_cash == raw.options.initial_cash == 1_000_000.0


def test_a_folder_written_at_the_old_default_says_how_to_resume(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    """A blinded model folder that recorded CNY 1M: the same spec without a capital is
    refused with both figures and the advice; naming 1M resumes it."""
    from tradebench.benchmarks.portfolio.benchmark import BENCHMARK
    from tradebench.errors import ConfigError
    from tradebench.runs.executor import plan

    folder = tmp_path / "run"
    plan(BENCHMARK, _spec(cn_dataset_dir, [MODEL], initial_cash=1e6), folder)
    with pytest.raises(ConfigError) as refused:
        plan(BENCHMARK, _spec(cn_dataset_dir, [MODEL]), folder)
    message = str(refused.value)
    assert "options.initial_cash (1000000.0 then, 1000000000.0 now)" in message
    assert "set options.initial_cash to the folder's figure" in message
    assert "\n" not in message
    plan(BENCHMARK, _spec(cn_dataset_dir, [MODEL], initial_cash=1e6), folder)
