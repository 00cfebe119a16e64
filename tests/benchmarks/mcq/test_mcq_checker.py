"""The independent checker agrees with the builder, and it does fail on a wrong key."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.build.strategies import PARAM_GRIDS
from tradebench.benchmarks.mcq.build.templates import TEMPLATES
from tradebench.benchmarks.mcq.check import check_records
from tradebench.benchmarks.mcq.check.series import Bars
from tradebench.benchmarks.mcq.config import DataRef, StrategySpec
from tradebench.benchmarks.mcq.records import question_id


def _loader(bars: pd.DataFrame):
    series = Bars.from_frame(bars)
    return lambda ref: series


COMPARATIVE = ("sma_comparison", "signal_diff")
CHANGED = ("max_shares", "golden_cross_count", *COMPARATIVE)


def test_checker_agrees_on_full_base_pool(base_pool: BuildResult, aapl) -> None:
    report = check_records(base_pool.records)  # reloads the bars from the stored config
    assert report.ok, [v for v in report.failures]
    assert len(report.verdicts) == len(base_pool.records) >= 150
    alternatives = {r.alternative.key() for r in base_pool.records if r.alternative}
    assert report.backtests == base_pool.backtests == 5 + len(alternatives)
    built = {r.template for r in base_pool.records}
    assert built == set(TEMPLATES)  # every template asked at least once
    assert len(TEMPLATES) == 33
    for name in CHANGED:  # the four re-defined templates, all agreeing
        asked = [v for v in report.verdicts if v.template == name]
        assert len(asked) >= 3 and all(v.ok for v in asked), name


def test_comparative_questions_run_a_second_backtest(base_pool: BuildResult) -> None:
    for r in base_pool.records:
        if r.template not in COMPARATIVE:
            assert r.alternative is None
            continue
        alt = r.alternative
        assert alt is not None and alt.strategy.name == r.config.strategy.name
        assert alt.strategy.params != r.config.strategy.params
        assert alt.model_copy(update={"strategy": r.config.strategy}) == r.config
        for name, value in alt.strategy.params.items():  # the question states the set
            assert f"{name} = {value:g}" in r.question


def _comparative(pool: BuildResult, name: str):
    return next(r for r in pool.records if r.template == name)


def test_checker_re_runs_the_alternative_backtest(base_pool: BuildResult, aapl) -> None:
    loader = _loader(aapl[1])
    for name in COMPARATIVE:
        record = _comparative(base_pool, name)
        alt = record.alternative
        assert alt is not None
        cheaper = alt.model_copy(update={"commission_rate": 0.01})
        cases = {
            "more than the strategy parameters": record.model_copy(update={"alternative": cheaper}),
            "without its alternative": record.model_copy(update={"alternative": None}),
            "the question's own parameters": record.model_copy(
                update={"alternative": alt.model_copy(update={"strategy": record.config.strategy})}
            ),
        }
        for problem, bad in cases.items():
            report = check_records([bad], loader=loader)
            assert not report.ok and problem in report.failures[0].detail, name
        # another legal parameter set changes the re-derived value: the key no longer matches
        grid = PARAM_GRIDS[record.config.strategy.name]
        taken = (record.config.strategy.params, alt.strategy.params)
        params = next(p for p in grid if p not in taken)
        other = alt.model_copy(
            update={"strategy": StrategySpec(name=alt.strategy.name, params=params)}
        )
        report = check_records([record.model_copy(update={"alternative": other})], loader=loader)
        assert not report.ok and "matching the re-derived value" in report.failures[0].detail


def test_every_missing_pair_is_reported(base_pool: BuildResult) -> None:
    asked = {(r.template, r.strategy) for r in base_pool.records}
    skipped = {(s.template, s.strategy) for s in base_pool.skipped}
    assert len(asked) + len(skipped) == 33 * 5
    assert all(s.reason for s in base_pool.skipped)


def test_checker_fails_on_a_wrong_letter(base_pool: BuildResult, aapl) -> None:
    record = next(r for r in base_pool.records if r.template == "max_drawdown")
    wrong = "A" if record.answer != "A" else "B"
    bad = record.model_copy(update={"answer": wrong})
    report = check_records([bad], loader=_loader(aapl[1]))
    assert not report.ok
    assert "matching the re-derived value" in report.failures[0].detail


def test_checker_fails_on_a_shifted_option(base_pool: BuildResult, aapl) -> None:
    record = next(r for r in base_pool.records if r.template == "net_pnl")
    options = dict(record.options)
    value = float(options[record.answer].replace(",", ""))
    options[record.answer] = f"{value + 0.02:,.2f}"  # off by two cents
    ident = question_id(record.question, options)  # the id matches: only the value is off
    bad = record.model_copy(update={"options": options, "id": ident})
    (verdict,) = check_records([bad], loader=_loader(aapl[1])).verdicts
    assert not verdict.ok and "matching the re-derived value" in verdict.detail


COMPOSITES = (
    "buy_sell_signals",
    "first_buy",
    "trade_outcomes",
    "commission",
    "days_in_position",
    "peak_portfolio_date",
)


def _nudge(kind: str, text: str) -> str:
    """One part of an option moved by the smallest step its display shows."""
    if kind == "date":
        return str(np.datetime64(text) + 1)
    if kind == "integer":
        return f"{int(text.replace(',', '')) + 1:,}"
    decimals = len(text.split(".")[1])
    return f"{float(text.replace(',', '')) + 2 * 10**-decimals:,.{decimals}f}"


def test_every_part_of_a_multi_part_answer_is_checked(base_pool: BuildResult, aapl) -> None:
    """The six templates ask what the paper asks, all parts in one option; the checker
    re-derives each part: moving any one part of the keyed option makes it disagree."""
    records = [r for r in base_pool.records if r.template in COMPOSITES]
    assert {r.template for r in records} == set(COMPOSITES)
    assert all(r.answer_kind == "composite" for r in records)
    assert check_records(records, loader=_loader(aapl[1])).ok
    for record in records:
        pattern = re.escape(record.params["form"])
        for i in range(len(record.params["kinds"])):
            pattern = pattern.replace(re.escape(f"{{{i}}}"), "(.+?)")
        key = record.options[record.answer]
        parts = list(re.fullmatch(pattern, key).groups())  # type: ignore[union-attr]
        for i, kind in enumerate(record.params["kinds"]):
            moved = [*parts[:i], _nudge(kind, parts[i]), *parts[i + 1 :]]
            options = {**record.options, record.answer: record.params["form"].format(*moved)}
            ident = question_id(record.question, options)  # a consistent record, wrong key
            bad = record.model_copy(update={"options": options, "id": ident})
            (verdict,) = check_records([bad], loader=_loader(aapl[1])).verdicts
            assert not verdict.ok, (record.template, i, options[record.answer])
            assert "matching the re-derived value" in verdict.detail


def test_max_drawdown_is_asked_in_money(base_pool: BuildResult) -> None:
    """The paper asks the largest fall from a running peak in dollars, not in percent."""
    for record in (r for r in base_pool.records if r.template == "max_drawdown"):
        assert record.params == {"in": "money"} and "in money" in record.question
        assert not any(t.endswith("%") for t in record.options.values())


def test_checker_fails_when_config_changes(base_pool: BuildResult, aapl) -> None:
    record = next(r for r in base_pool.records if r.template == "net_pnl")
    cfg = record.config.model_copy(update={"commission_rate": 0.002})
    report = check_records([record.model_copy(update={"config": cfg})], loader=_loader(aapl[1]))
    assert not report.ok


def test_checker_refuses_changed_bars(base_pool: BuildResult, aapl) -> None:
    import pytest

    from tradebench.benchmarks.mcq.bars import load_bars
    from tradebench.errors import DataError

    ref: DataRef = base_pool.records[0].config.data
    moved = ref.model_copy(update={"end": ref.end.replace(month=6)})
    with pytest.raises(DataError, match="digest"):
        load_bars(moved)


def _close_only(self, symbol, start=None, end=None, adjusted=True):
    """The loader bug of record: adjust the close by the factor and leave open/high/low raw."""
    rows = self.bars[self.bars["symbol"] == symbol]
    rows = rows[(rows["date"] >= pd.Timestamp(start)) & (rows["date"] <= pd.Timestamp(end))]
    out = rows.set_index("date")[["open", "high", "low", "close", "volume"]].copy()
    if adjusted:
        out["close"] = out["close"].to_numpy() * rows["adj_factor"].to_numpy()
    out.index.name = "date"
    return out


def test_a_builder_loader_bug_makes_the_checker_disagree(cn_dataset_dir, monkeypatch) -> None:
    """Moutai from a real dataset folder: the checker reads the folder with its own code, so
    a builder that adjusts only the close is caught (digest, and the answers themselves)."""
    import datetime as dt
    import functools

    from tradebench.benchmarks.mcq.bars import resolve
    from tradebench.benchmarks.mcq.build.builder import BuildSpec, build
    from tradebench.benchmarks.mcq.check.series import load_series
    from tradebench.data.dataset import Dataset
    from tradebench.errors import DataError

    ref = DataRef(
        kind="dataset",
        path=str(cn_dataset_dir),
        symbol="SH600519",
        start=dt.date(2023, 1, 1),
        end=dt.date(2024, 12, 31),
    )
    good = build(BuildSpec(data=resolve(ref)[0], seed=42), resolve(ref)[1])
    assert check_records(good.records).ok
    monkeypatch.setattr(Dataset, "symbol_bars", _close_only)  # stays for the check too:
    bad_ref, bad_bars = resolve(ref)  # a bug in shared code is there on both sides
    bad = build(BuildSpec(data=bad_ref, seed=42), bad_bars)
    try:
        check_records(bad.records)
    except DataError as exc:
        assert "digest mismatch" in str(exc)
    else:
        raise AssertionError("the checker agreed with bars the dataset does not hold")
    unverified = check_records(bad.records, loader=functools.partial(load_series, verify=False))
    assert len(unverified.failures) >= len(bad.records) // 3, len(unverified.failures)
