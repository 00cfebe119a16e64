"""The six read-only research tools of `open_research` mode, over real identifiers.

Each function takes a `StepContext` and already-unmasked arguments and returns JSON-able
data with real symbols and ISO dates; `tools.py` wraps them with masking and schemas.
Numbers are computed on the real series; every price level and every quantity of a stock
is shown through the step's one converter, `ctx.scale` (`shown.PriceScale`), and only
identifiers and dates are masked later. A refusal never quotes an argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tradebench.benchmarks.portfolio.account_check import account_problems
from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.shown import UNITS_NOTE, PriceScale
from tradebench.errors import ToolError
from tradebench.features.technical import FEATURES
from tradebench.market.broker import DayQuotes, ExecutionContext, execute_orders
from tradebench.market.ledger import Account, Holding
from tradebench.market.orders import Order, OrderRecord

SCREEN_FEATURES = FEATURES


def _r(x: float, digits: int = 4) -> float | None:
    return round(float(x), digits) if np.isfinite(x) else None


def _col(ctx: StepContext, symbol: str) -> int:
    col = ctx.view.column(symbol)
    if col < 0:  # only where symbols are shown: a masked id is checked when it is unmasked
        raise ToolError("unknown stock id: use the stock ids shown")
    return col


def get_market_context(ctx: StepContext) -> dict[str, Any]:
    """Index returns (1/5/20 days), breadth, limit hits and dispersion on T-1."""
    v = ctx.view
    idx = v.index_window("close", 21)
    rets = {
        f"index_ret_{n}d": _r(idx[-1] / idx[-1 - n] - 1) if idx.size > n else None
        for n in (1, 5, 20)
    }
    close = v.window("close", 2)
    members = ctx.universe
    out: dict[str, Any] = {"as_of": str(v.last_day), "universe_size": int(members.size), **rets}
    if close.shape[0] == 2:
        day_ret = close[1, members] / close[0, members] - 1
        ok = np.isfinite(day_ret)
        limited = v.limit_pct[members] > 0  # markets without limits count no limit hits
        thr = np.where(limited, v.limit_pct[members] - 0.005, np.inf)
        out |= {
            "advancers": int((day_ret[ok] > 0).sum()),
            "decliners": int((day_ret[ok] < 0).sum()),
            "breadth": _r((day_ret[ok] > 0).mean()) if ok.any() else None,
            "limit_up_count": int((day_ret >= thr)[ok].sum()),
            "limit_down_count": int((day_ret <= -thr)[ok].sum()),
            "cross_sectional_dispersion": _r(np.std(day_ret[ok])) if ok.any() else None,
            "suspended_count": int(v.last("suspended")[members].sum()),
        }
    vol = ctx.features["vol_20d"][members]
    out["median_vol_20d"] = _r(np.nanmedian(vol)) if np.isfinite(vol).any() else None
    return out


def screen_candidates(
    ctx: StepContext,
    feature: str,
    top_k: int = 10,
    ascending: bool = False,
    board: str | None = None,
    exclude_suspended: bool = True,
) -> dict[str, Any]:
    """Rank today's universe by a feature, with optional board and suspension filters."""
    if feature not in SCREEN_FEATURES:
        raise ToolError(f"unknown feature; choose one of {list(SCREEN_FEATURES)}")
    cols = ctx.universe
    if board:
        cols = cols[ctx.view.boards[cols] == board]
    if exclude_suspended:
        cols = cols[~ctx.view.last("suspended")[cols]]
    values = ctx.features[feature][cols]
    ok = np.isfinite(values)
    cols, values = cols[ok], values[ok]
    order = np.lexsort((ctx.view.symbols[cols].astype(str), values if ascending else -values))
    rows = [
        {
            "stock_id": str(ctx.view.symbols[c]),
            feature: _r(values[i]),
            "board": str(ctx.view.boards[c]),
            "ret_5d": _r(ctx.features["ret_5d"][c]),
        }
        for i, c in ((i, cols[i]) for i in order[:top_k])
    ]
    return {"feature": feature, "ascending": ascending, "count": len(rows), "rows": rows}


def _limit_prices(ctx: StepContext, col: int) -> dict[str, Any]:
    close = float(ctx.view.last("close")[col])
    pct = float(ctx.view.limit_pct[col])
    if pct <= 0 or not np.isfinite(close):
        return {"limit_pct": pct or None, "next_limit_up": None, "next_limit_down": None}
    up, down = ctx.scale.limit_prices(col, close, pct)
    return {"limit_pct": pct, "next_limit_up": up, "next_limit_down": down}


def get_stock_snapshot(ctx: StepContext, stock_id: str, lookback: int = 10) -> dict[str, Any]:
    """Recent bars, features, board, limits, limit-hit warnings and the holding of one name."""
    col, scale = _col(ctx, stock_id), ctx.scale
    rows = [
        {
            "date": day,
            "open": scale.price(col, o),
            "high": scale.price(col, h),
            "low": scale.price(col, lo),
            "close": scale.price(col, c),
            "volume": _volume(scale, col, volume),
            "suspended": suspended,
        }
        for day, o, h, lo, c, volume, suspended in _bars(ctx, col, lookback)
    ]
    closes = ctx.view.window("close", 6)[:, col]
    moves = closes[1:] / closes[:-1] - 1
    near = float(ctx.view.limit_pct[col]) - 0.005
    hits = int(np.sum(np.abs(moves[np.isfinite(moves)]) >= near)) if near > 0 else 0
    held = ctx.account.holding(stock_id)
    nav = ctx.account.nav
    lot_cost = float(ctx.view.last("close")[col]) * ctx.rules.lot_size
    return {
        "stock_id": stock_id,
        "board": str(ctx.view.boards[col]),
        "in_universe": stock_id in ctx.universe_set,
        "bars": rows,
        "features": {k: _r(v) for k, v in ctx.features.rows([col])[0].items()},
        **_limit_prices(ctx, col),
        "limit_hits_last_5d": hits,
        "warning": "hit a daily limit in the last 5 days" if hits else None,
        "one_lot_cost_pct_nav": _lot_cost_pct(ctx, col, lot_cost, nav),
        "holding": None
        if held is None
        else {
            "shares": scale.quantity(col, held.shares),
            "sellable": scale.quantity(col, held.available),
            "weight": scale.weight(held.weight),
        },
    }


BAR_FIELDS = ("open", "high", "low", "close", "volume", "suspended")


def _bars(ctx: StepContext, col: int, lookback: int) -> list[tuple[Any, ...]]:
    """The last `lookback` visible bars of column `col` on which it was listed, oldest
    first: (ISO day, open, high, low, close, volume, suspended) as Python values."""
    v = ctx.view
    listed = v.window("listed", lookback)[:, col]
    calendar = v.calendar
    days = calendar[len(calendar) - len(listed) :][listed].astype("datetime64[D]")
    values = [v.window(name, lookback)[:, col][listed].tolist() for name in BAR_FIELDS]
    return list(zip(days.astype(str).tolist(), *values, strict=True))


def _volume(scale: PriceScale, col: int, volume: float) -> float | None:
    """A day's volume as shown: shares, or rebased units (amount / volume is a price)."""
    shown = scale.quantity(col, volume)
    return None if shown is None else float(shown)


def _lot_cost_pct(ctx: StepContext, col: int, lot_cost: float, nav: float) -> float | None:
    """One lot's cost in % of NAV. When price levels are hidden: 0 where the account grid
    hides the lot (`PriceScale.lot_hidden`), else one significant figure, so the field
    cannot give the raw price back."""
    if not nav > 0 or not np.isfinite(lot_cost):
        return None
    pct = lot_cost / nav * 100
    if not ctx.scale.hides_levels or pct <= 0:
        return _r(pct, 3)
    if ctx.scale.lot_hidden(col, ctx.rules.lot_size):
        return 0.0
    return float(f"{pct:.1g}")


def compare_candidates(ctx: StepContext, stock_ids: list[str]) -> dict[str, Any]:
    """2-10 names side by side with their 60-day daily-return correlations."""
    if not 2 <= len(stock_ids) <= 10:
        raise ToolError("compare 2 to 10 stock ids")
    cols = [_col(ctx, s) for s in stock_ids]
    features = ctx.features.rows(cols)
    adj = ctx.view.window("adj_close", 61)[:, cols]
    rets = adj[1:] / adj[:-1] - 1
    ok = np.isfinite(rets).all(axis=1)
    corr = np.corrcoef(rets[ok].T) if ok.sum() > 2 else np.full((len(cols), len(cols)), np.nan)
    return {
        "rows": [
            {
                "stock_id": s,
                "board": str(ctx.view.boards[c]),
                **{k: _r(v) for k, v in f.items()},
            }
            for s, c, f in zip(stock_ids, cols, features, strict=True)
        ],
        "correlation_60d": {
            s: {t: _r(corr[i, j], 3) for j, t in enumerate(stock_ids)}
            for i, s in enumerate(stock_ids)
        },
    }


def get_portfolio_state(ctx: StepContext) -> dict[str, Any]:
    """Cash, NAV, holdings with weights and sellable shares, at T-1's close."""
    a, scale = ctx.account, ctx.scale
    state: dict[str, Any] = {
        "cash": scale.money(a.cash),
        "nav": scale.money(a.nav),
        "cash_weight": scale.weight(a.cash / a.nav) if a.nav > 0 else None,
        "positions": [
            {
                "stock_id": p.symbol,
                "shares": p.shares,
                "sellable": p.sellable,
                "close": p.close,
                "weight": p.weight,
            }
            for p in ctx.shown_positions
        ],
    }
    return state | ({"units": UNITS_NOTE} if scale.hides_levels else {})


def risk_check(ctx: StepContext, orders: list[Order]) -> dict[str, Any]:
    """Dry-run orders through the broker's rules on the state as of T-1.

    T-1's bar stands in for the fill day (its close as the price, its limit status), so
    the result predicts rejections and costs; it cannot know T's open. `refused` lists
    what the submission's account check would refuse in the list as a whole
    (`account_check`: the order's index, the code, the problem).
    """
    v = ctx.view
    if v.t < 2:
        raise ToolError("not enough history for a dry run")
    for order in orders:  # an id the data lacks is refused here, never quoted back
        _col(ctx, order.stock_id)
    close = v.window("close", 2)
    account = _account_copy(ctx)
    quotes = DayQuotes(
        open=close[1],
        high=v.last("high"),
        low=v.last("low"),
        close=close[1],
        prev_close=close[1],
        ref_close=close[0],
        suspended=v.last("suspended"),
        threshold=v.limit_threshold,
        column=v.column_map,
    )
    exe = ExecutionContext(rules=ctx.rules, nav_prev=ctx.account.nav, universe=ctx.universe_set)
    records = execute_orders(orders, account, quotes, exe)
    scale = ctx.scale
    return {
        "predicted": [
            {
                "stock_id": r.symbol,
                "side": r.side,
                "status": r.status,
                "shares": _shares_shown(scale, v.column(r.symbol), r),
                "est_cost": scale.money(r.cost),
                "reject_code": r.reject_code.value if r.reject_code else None,
                "message": scale.note(r),
            }
            for r in records
        ],
        "cash_after": scale.money(account.cash),
        "refused": [
            {"order": i, "code": str(code), "problem": text}
            for i, code, text in account_problems(orders, ctx)
        ],
        "note": "priced at the last close; real fills happen at the next open",
    }


def _shares_shown(scale: PriceScale, col: int, r: OrderRecord) -> float | int | None:
    """A dry-run record's size as shown; none for a refusal under rebased prices (its size
    may be the one-share stand-in of an order under one lot, `tools._orders`)."""
    shares = r.filled_shares or r.requested_shares
    if shares is None or (scale.hides_levels and r.status == "rejected"):
        return None
    return scale.quantity(col, shares)


def _account_copy(ctx: StepContext) -> Account:
    """A ledger the dry run may change: the snapshot's cash and holdings, set in one pass."""
    account = Account(ctx.account.cash)
    account.holdings = {p.symbol: Holding(p.shares, p.available) for p in ctx.account.positions}
    return account
