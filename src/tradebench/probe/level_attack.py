"""The price-level attack: the data attacker reads a raw price off the account it is shown.

A raw price level names an A-share (Moutai trades near 1,700), so under rebased prices no
number a masked agent reads may give one back. This attack takes each probe's (stock,
decision day T), buys the stock for real at T's open through the broker, and renders the
next step (T+1) through the portfolio benchmark's own masked views: `get_portfolio_state`,
and the memory-only user message with its account text and yesterday's fill. From the
numbers as shown it forms the ratios an attacker would:

- `state`: NAV x weight / shares of the holding in `get_portfolio_state` (the close);
- `account`: NAV x weight / shares of the holding line of the account text (the close);
- `fill`: the cash spent less the cost, over the shares filled (the fill price);
- `one_lot`: the holding's value (NAV x weight) over one lot's shares, a guess that the
  position is a single lot. Not a ratio of two shown numbers but the lot rule itself: with
  a known cash amount, weights give values in the currency, and a value is a whole number
  of lots times the price. It hits where the buy came to one lot (a stock whose lot costs
  more than half the weight bought), in any price mode.
- `lot_step`: the smallest order size, in the units the agent writes, that `risk_check`
  predicts to fill, found by doubling then bisecting. It is one lot in rebased units (the
  rebase close) unless the account grid hides the lot (`shown.PriceScale`), in which case
  it is one grid step, the same for every stock; the recovered close is the size times
  the shown close over 100.

A guess is a hit when it lies within `TOLERANCE` of the true raw price. The constant guess
of the rebased level (100) is the baseline: it hits the stocks that trade near 100 anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tradebench.agents.tools import Tool
from tradebench.benchmarks.portfolio.agent import rebase_close
from tradebench.benchmarks.portfolio.capital import hiding_capital
from tradebench.benchmarks.portfolio.context import PriceMode, StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts
from tradebench.benchmarks.portfolio.shown import REBASE_LEVEL
from tradebench.benchmarks.portfolio.tools import research_tools
from tradebench.data.dataset import Dataset
from tradebench.market.broker import ExecutionContext, execute_orders
from tradebench.market.ledger import Account
from tradebench.market.orders import Order, OrderRecord
from tradebench.market.rules import MarketRules
from tradebench.masking import MaskLevel, build_masker
from tradebench.metrics.stats import wilson_interval
from tradebench.runs.broker.engine import day_quotes
from tradebench.view import MarketView

TOLERANCE = 0.05
"""A recovered price within 5% of the true one is a hit."""
CHANNELS = ("state", "account", "fill", "one_lot", "lot_step")
MAX_STEP_UNITS = 2**40
"""Where the order-size search gives up (no size filled)."""
BUY_WEIGHT = 0.2
"""The weight of the one buy that makes the account hold the stock."""
_ACCOUNT = re.compile(r"cash \S+ ([\d,.]+) \([\d.]+% of NAV\); NAV \S+ ([\d,.]+)")
_HOLDING = re.compile(r"^- (\S+): ([\d,.]+) shares \(sellable [^)]*\), weight ([\d.]+)%", re.M)
_FILL = re.compile(r"^- BUY (\S+): (?:filled|partial) ([\d,.]+) shares, cost ([\d,.]+)", re.M)


@dataclass(frozen=True)
class Shown:
    """What the masked agent reads on the step after the buy."""

    state: dict[str, Any]
    """`get_portfolio_state`'s result, masked."""
    user: str
    """The memory-only user message (account text and yesterday's fill), masked."""
    initial_cash: float
    lot_size: int
    lot_step: float | None = None
    """The smallest order size (as written) that `risk_check` predicts to fill."""
    close_shown: float | None = None
    """The stock's close as shown on the step (the frame `lot_step` is read in)."""


@dataclass(frozen=True)
class Truth:
    """The real prices the attack is after."""

    close: float
    """The stock's raw close on T (the last close the next step shows)."""
    fill: float
    """The raw price the buy filled at."""


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def recover(shown: Shown) -> dict[str, float]:
    """Each channel's recovered price (channels without a number are left out)."""
    out: dict[str, float] = {}
    for p in shown.state.get("positions") or []:
        if p.get("shares") and p.get("weight") is not None:
            out["state"] = shown.state["nav"] * p["weight"] / p["shares"]
            out["one_lot"] = shown.state["nav"] * p["weight"] / shown.lot_size
    if shown.lot_step is not None and shown.close_shown is not None:
        out["lot_step"] = shown.lot_step * shown.close_shown / REBASE_LEVEL
    account = _ACCOUNT.search(shown.user)
    if account is None:
        return out
    cash, nav = _number(account.group(1)), _number(account.group(2))
    for _, units, weight in _HOLDING.findall(shown.user):
        if _number(units) > 0:
            out["account"] = nav * _number(weight) / 100 / _number(units)
    fills = _FILL.findall(shown.user)
    if len(fills) == 1 and _number(fills[0][1]) > 0:
        _, units, cost = fills[0]
        out["fill"] = (shown.initial_cash - cash - _number(cost)) / _number(units)
    return out


def smallest_filled_size(risk_check: Tool, stock_id: str) -> int | None:
    """The smallest whole order size `risk_check` predicts to fill for a BUY of `stock_id`
    (doubling, then bisection); None when no size up to `MAX_STEP_UNITS` fills."""

    def fills(size: int) -> bool:
        order = {"stock_id": stock_id, "side": "BUY", "shares": size}
        (row,) = risk_check.fn({"orders": [order]})["predicted"]
        return row["status"] != "rejected"

    hi = 1
    while not fills(hi):
        hi *= 2
        if hi > MAX_STEP_UNITS:
            return None
    lo = hi // 2  # fills(lo) is False (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fills(mid) else (mid, hi)
    return hi


def _bought(ds: Dataset, pos: int, symbol: str, rules: MarketRules) -> tuple[Account, OrderRecord]:
    """An all-cash account after buying `symbol` at day `pos`'s open (the real broker)."""
    panel = ds.panel
    account = Account(rules.initial_cash)
    view = MarketView(ds, panel.dates[pos])
    nav = account.snapshot(view.last("close"), view.column_map).nav
    universe = frozenset(view.symbols[view.member_mask()].tolist())
    quotes = day_quotes(panel, pos, panel.fields["close"])
    order = Order(stock_id=symbol, side="BUY", target_weight=BUY_WEIGHT)
    (record,) = execute_orders([order], account, quotes, ExecutionContext(rules, nav, universe))
    return account, record


def shown_after_buy(
    ds: Dataset,
    pos: int,
    symbol: str,
    price_mode: PriceMode,
    level: MaskLevel,
    seed: int = 0,
    initial_cash: float = 1_000_000.0,
) -> tuple[Shown, Truth] | None:
    """The next step's account as the masked agent reads it, and the truth; None when the
    buy did not fill (suspended, at a limit, one lot above the weight) or `pos` is the
    data's last day (no next step)."""
    panel = ds.panel
    rules = MarketRules.for_market(ds.market, initial_cash=initial_cash)
    account, record = _bought(ds, pos, symbol, rules)
    if record.filled_shares <= 0 or pos + 1 >= len(panel.dates):
        return None
    account.unlock()
    first, view = panel.dates[pos], MarketView(ds, panel.dates[pos + 1])
    snap = account.snapshot(view.last("close"), view.column_map)
    rebase = rebase_close(view, first) if price_mode == "rebased" else None
    ctx = StepContext(view, snap, rules, price_mode, rebase)
    masker = build_masker(level, panel.symbols, panel.dates, first, seed, f"{symbol}:{pos}")
    tools: dict[str, Tool] = {t.name: t for t in research_tools(ctx, masker)}
    state = tools["get_portfolio_state"].fn({})
    step = StepInfo(2, 2, (record,), 0.0, 0.0)
    user = user_message(ctx, masker, load_prompts(), "memory_only", step, currency="CNY")
    col = view.column(symbol)
    truth = Truth(float(view.last("close")[col]), float(record.fill_price or 0))
    alias = masker.symbol_label(symbol)
    step_size = smallest_filled_size(tools["risk_check"], alias)
    close_shown = ctx.scale.price(col, float(view.last("close")[col]))
    shown = Shown(state, user, rules.initial_cash, rules.lot_size, step_size, close_shown)
    return shown, truth


def attack_levels(
    ds: Dataset,
    pairs: list[tuple[str, int]],
    price_modes: tuple[PriceMode, ...] = ("raw", "rebased"),
    level: MaskLevel = "blinded",
    initial_cash: float | None = None,
) -> pd.DataFrame:
    """One row per (stock, day) x price mode x channel: the recovered price, the truth,
    whether it is a hit, and whether the constant rebased level would have been one.
    `initial_cash` None: the capital a run would get by default with model episodes under
    rebased prices and a window starting on each probe's day (`capital.hiding_capital`);
    the `initial_cash` column says which."""
    if initial_cash is None:
        lot = MarketRules.for_market(ds.market).lot_size
        initial_cash = hiding_capital(ds, sorted({ds.panel.dates[pos] for _, pos in pairs}), lot)
    rows = []
    for symbol, pos in pairs:
        for mode in price_modes:
            found = shown_after_buy(ds, pos, symbol, mode, level, initial_cash=initial_cash)
            if found is None:
                continue
            shown, truth = found
            for channel, value in recover(shown).items():
                real = truth.fill if channel == "fill" else truth.close
                rows.append(
                    {
                        "symbol": symbol,
                        "day": pd.Timestamp(ds.panel.dates[pos]).date(),
                        "price_mode": mode,
                        "channel": channel,
                        "recovered": value,
                        "truth": real,
                        "hit": abs(value / real - 1) <= TOLERANCE,
                        "constant_hit": abs(REBASE_LEVEL / real - 1) <= TOLERANCE,
                        "initial_cash": initial_cash,
                    }
                )
    return pd.DataFrame(rows)


def level_rates(results: pd.DataFrame) -> pd.DataFrame:
    """Hit rate per price mode and channel with its 95% Wilson interval, the constant
    guess's rate beside it, the hits the constant guess does not also make, and the median
    relative error of the recovered price."""
    out = []
    for (mode, channel), g in results.groupby(["price_mode", "channel"], sort=True):
        n, k = len(g), int(g["hit"].sum())
        ci = wilson_interval(k, n)
        error = (g["recovered"] / g["truth"] - 1).abs().median()
        out.append(
            {
                "price_mode": mode,
                "channel": channel,
                "n": n,
                "hits": k,
                "rate": k / n,
                "low": ci.low,
                "high": ci.high,
                "constant_rate": float(g["constant_hit"].mean()),
                "beyond_constant": int((g["hit"] & ~g["constant_hit"]).sum()),
                "median_error": float(error),
            }
        )
    return pd.DataFrame(out)


def probe_pairs(probes: Any, calendar: np.ndarray) -> list[tuple[str, int]]:
    """(symbol, calendar position of T) of each probe of a probe set."""
    days = {pd.Timestamp(d).date(): i for i, d in enumerate(calendar)}
    return [(p.gold.symbol, days[p.gold.decision_day]) for p in probes]
