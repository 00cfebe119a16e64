"""Research tools: point-in-time (future noise changes nothing) and masked end to end."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.leak_scan import find_leaks
from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts, system_prompt
from tradebench.benchmarks.portfolio.tools import research_tools, submit_tool
from tradebench.data import Dataset, load_dataset
from tradebench.errors import ToolError
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import build_masker
from tradebench.view import MarketView

DAY = "2024-03-01"


@pytest.fixture(scope="module")
def cn(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


def _noisy(ds: Dataset, cut: str, seed: int = 3) -> Dataset:
    rng = np.random.default_rng(seed)
    bars = ds.bars.copy()
    late = (bars["date"] >= pd.Timestamp(cut)).to_numpy()
    for col in ("open", "high", "low", "close", "volume", "amount", "adj_factor"):
        bars.loc[late, col] = rng.uniform(1, 500, size=late.sum())
    index = ds.index.copy()
    late_idx = (index["date"] >= pd.Timestamp(cut)).to_numpy()
    index.loc[late_idx, "close"] = rng.uniform(1, 5000, size=late_idx.sum())
    return replace(ds, bars=bars, index=index)


def _account(view: MarketView) -> Account:
    acct = Account(600_000)
    for sym, shares in (("SH600519", 100), ("SZ000001", 5000)):
        acct.record_buy(sym, shares, 0.0, 0.0, t_plus_one=True)
    acct.cash = 600_000
    acct.unlock()
    return acct


def _calls(ds: Dataset, level: str, day: str = DAY) -> dict[str, str]:
    view = MarketView(ds, day)
    acct = _account(view)
    snap = acct.snapshot(view.last("close"), view.column_map)
    ctx = StepContext(view, snap, MarketRules.cn())
    masker = build_masker(level, ds.panel.symbols, ds.panel.dates, day, seed=1, episode_id="e")
    tools = {t.name: t for t in research_tools(ctx, masker)}
    ids = [masker.symbol_label(s) for s in ("SH600519", "SZ000001", "SZ300750")]
    args = {
        "get_market_context": {},
        "screen_candidates": {"feature": "ret_20d", "top_k": 15},
        "get_stock_snapshot": {"stock_id": ids[0], "lookback": 10},
        "compare_candidates": {"stock_ids": ids},
        "get_portfolio_state": {},
        "risk_check": {
            "orders": [
                {"stock_id": ids[1], "side": "SELL", "target_weight": 0.0},
                {"stock_id": ids[2], "side": "BUY", "shares": 300},
            ]
        },
    }
    out = {
        name: json.dumps(asyncio.run(tools[name].run(a)), sort_keys=True)
        for name, a in args.items()
    }
    obs = user_message(
        ctx, masker, load_prompts(), "fixed_candidate", StepInfo(2, 5, (), 0.01, 0.002)
    )
    out["user_message"] = obs
    out["system"] = masker.mask_text(
        system_prompt(load_prompts(), "open_research", MarketRules.cn())
    )
    return out


def test_tools_ignore_the_future(cn: Dataset) -> None:
    clean = _calls(cn, "bright")
    noisy = _calls(_noisy(cn, DAY), "bright")
    assert clean == noisy
    assert json.loads(clean["get_stock_snapshot"])["bars"][-1]["date"] < DAY


@pytest.mark.parametrize("level", ["stock_blind", "date_blind", "blinded"])
def test_masked_outputs_leak_nothing(cn: Dataset, level: str) -> None:
    out = _calls(cn, level)
    symbols = [str(s) for s in cn.panel.symbols]
    for name, text in out.items():
        leaks = find_leaks(
            text,
            symbols,
            cn.panel.dates,
            stocks=level != "date_blind",
            dates=level != "stock_blind",
        )
        assert leaks == [], (name, leaks[:5])


def test_an_unknown_id_gets_one_error_whatever_was_sent(cn: Dataset) -> None:
    """The refusal quotes nothing: an alias out of range and a real ticker read the same."""
    view = MarketView(cn, DAY)
    snap = Account(1e6).snapshot(view.last("close"), view.column_map)
    masker = build_masker("blinded", cn.panel.symbols, cn.panel.dates, DAY, 1, "e")
    tools = {t.name: t for t in research_tools(StepContext(view, snap, MarketRules.cn()), masker)}
    messages = set()
    for sent in ("asset_9999", "SH600519", "600519.SH"):
        with pytest.raises(ToolError) as err:
            asyncio.run(tools["get_stock_snapshot"].run({"stock_id": sent}))
        messages.add(str(err.value))
    assert messages == {"unknown asset id: use the asset ids shown (asset_0001 style)"}


def test_alias_reaches_data_as_real_symbol(cn: Dataset) -> None:
    out = json.loads(_calls(cn, "blinded")["get_stock_snapshot"])
    bright = json.loads(_calls(cn, "bright")["get_stock_snapshot"])
    assert out["features"] == bright["features"]  # same numbers, real series behind the alias
    assert out["stock_id"].startswith("asset_") and bright["stock_id"] == "SH600519"


def test_risk_check_predicts_rules(cn: Dataset) -> None:
    out = json.loads(_calls(cn, "bright")["risk_check"])
    sell, buy = out["predicted"]
    assert sell["status"] == "filled" and sell["shares"] == 5000
    # T-1's bar stands in for the fill: 300 shares at its close, 5 bps with a CNY 5 floor
    view = MarketView(cn, DAY)
    close = float(view.last("close")[view.column("SZ300750")])
    assert (buy["status"], buy["shares"]) == ("filled", 300)
    assert buy["est_cost"] == pytest.approx(round(max(5.0, 300 * close * 5e-4), 2))
    assert out["cash_after"] > 600_000  # the sale funds the buy


def test_submit_validation_feedback_is_masked(cn: Dataset) -> None:
    view = MarketView(cn, DAY)
    snap = _account(view).snapshot(view.last("close"), view.column_map)
    masker = build_masker("blinded", cn.panel.symbols, cn.panel.dates, DAY, 1, "e")
    ctx = StepContext(view, snap, MarketRules.cn())
    submit = submit_tool(ctx, masker)
    held = masker.symbol_label("SZ000001")
    good = {
        "orders": [
            {
                "stock_id": held,
                "side": "SELL",
                "target_weight": 0.0,
                "confidence": 0.6,
                "reason": "take profit on strength",
            }
        ],
        "overall_reason": "trim a large position before the open",
    }
    sub = submit.accept(good)
    assert sub.action.orders[0].stock_id == "SZ000001"
    bad = {
        "orders": [
            {
                "stock_id": masker.symbol_label("SZ300750"),
                "side": "BUY",
                "shares": 100,
                "confidence": 0.5,
                "reason": "momentum continuation",
            },
            {
                "stock_id": held,
                "side": "SELL",
                "shares": 100,
                "confidence": 0.5,
                "reason": "raise cash for the buy",
            },
        ],
        "overall_reason": "rotate into momentum names today",
    }
    with pytest.raises(ToolError) as err:
        submit.accept(bad)
    assert "SELL before every BUY" in str(err.value)
    assert "SZ000001" not in str(err.value) and "SZ300750" not in str(err.value)


@pytest.mark.parametrize("price_mode", ["raw", "rebased"])
def test_message_and_portfolio_tool_show_each_holding_as_the_scale_converts_it(
    cn: Dataset, price_mode: str
) -> None:
    """Held and sellable differ for a holding bought the day before (T+1): the account text
    and the portfolio tool show each as `PriceScale` converts it, the same in both."""
    view = MarketView(cn, DAY)
    close = view.last("close")
    acct = Account(1_000_000)
    for sym, shares in (("SH600519", 100), ("SZ000001", 5000), ("SZ300750", 300)):
        price = float(close[view.column(sym)])
        acct.record_buy(sym, shares, price, 0.0, t_plus_one=True)
        if sym != "SZ000001":  # the other two were bought earlier: sellable
            acct.holdings[sym].available = shares
    snap = acct.snapshot(close, view.column_map)
    first = cn.panel.dates[int(np.searchsorted(cn.panel.dates, np.datetime64(DAY))) - 5]
    base = view.window("close", 6)[0] if price_mode == "rebased" else None
    ctx = StepContext(view, snap, MarketRules.cn(), price_mode, base)
    masker = build_masker("blinded", cn.panel.symbols, cn.panel.dates, first, 1, "e")
    tools = {t.name: t for t in research_tools(ctx, masker)}
    state = asyncio.run(tools["get_portfolio_state"].run({}))
    text = user_message(ctx, masker, load_prompts(), "open_research", StepInfo(1, 5, (), 0, 0))
    scale = ctx.scale
    rows = {row["stock_id"]: row for row in state["positions"]}
    assert len(rows) == 3
    for p in snap.positions:
        col = view.column(p.symbol)
        shown = (scale.quantity(col, p.shares), scale.quantity(col, p.available))
        row = rows[masker.symbol_label(p.symbol)]
        assert (row["shares"], row["sellable"]) == shown
        assert (row["close"], row["weight"]) == (scale.price(col, p.close), scale.weight(p.weight))
        held, sellable = (f"{x:,}" if isinstance(x, int) else f"{x:,.2f}" for x in shown)
        line = f"- {masker.symbol_label(p.symbol)}: {held} shares (sellable {sellable}), "
        assert line in text
    locked = rows[masker.symbol_label("SZ000001")]
    assert locked["sellable"] != locked["shares"]
