"""Typed market rules: lots, costs, T+1 and price limits. Rules never touch cash."""

from __future__ import annotations

from dataclasses import dataclass

from tradebench.data.boards import BOARD_RULES
from tradebench.market.orders import RejectCode, Side


@dataclass(frozen=True)
class MarketRules:
    """Everything the broker needs to know about a market, passed explicitly.

    Attributes:
        market: `cn` or `us`.
        lot_size: buy quantities must be multiples of this (a sell may close an odd rest).
        buy_cost_bps / sell_cost_bps: proportional costs in basis points of traded value.
        min_cost: minimum cost per filled order, in currency.
        t_plus_one: shares bought on T become sellable on T+1.
        price_limits: apply board limits (thresholds come from the data's boards).
        initial_cash: starting capital.
        half_spread_bps: side-aware execution price: a BUY fills at open x (1 + h), a SELL
            at open x (1 - h), h = half_spread_bps / 1e4 (0 = fill at the open).
    """

    market: str = "cn"
    lot_size: int = 100
    buy_cost_bps: float = 5.0
    sell_cost_bps: float = 15.0
    min_cost: float = 5.0
    t_plus_one: bool = True
    price_limits: bool = True
    initial_cash: float = 1_000_000.0
    half_spread_bps: float = 0.0

    @classmethod
    def cn(cls, initial_cash: float = 1_000_000.0) -> MarketRules:
        """A-share rules: T+1, 100-share lots, 5/15 bps with CNY 5 minimum, board limits."""
        return cls(initial_cash=initial_cash)

    @classmethod
    def us(cls, cost_bps: float = 1.0, initial_cash: float = 1_000_000.0) -> MarketRules:
        """US rules: no T+1, 1-share lots, symmetric bps costs, no price limits."""
        return cls("us", 1, cost_bps, cost_bps, 0.0, False, False, initial_cash)

    @classmethod
    def for_market(cls, market: str, initial_cash: float = 1_000_000.0) -> MarketRules:
        """Default rules of a market."""
        return cls.cn(initial_cash) if market == "cn" else cls.us(initial_cash=initial_cash)

    def limit_thresholds(self) -> dict[str, float]:
        """The broker's limit threshold per board, as a fraction of the reference close (an
        open at or beyond it is limit-locked); empty when the market has no price limits.

        Read from the same board table the engine's panel uses, so a prompt built from it
        states the limits the broker applies.
        """
        if not self.price_limits:
            return {}
        return {
            board: rule.engine_threshold
            for board, rule in BOARD_RULES.items()
            if board not in ("other", "us") and rule.engine_threshold > 0
        }

    def fill_price(self, open_: float, side: Side) -> float:
        """The price a `side` order fills at when the day opens at `open_`: the open plus
        (BUY) or minus (SELL) the half-spread."""
        if self.half_spread_bps == 0:
            return open_
        h = self.half_spread_bps / 1e4
        return open_ * (1 + h) if side == "BUY" else open_ * (1 - h)

    def cost(self, value: float, side: Side) -> float:
        """Cost of a fill worth `value`: bps of value with the per-order minimum."""
        if value <= 0:
            return 0.0
        bps = self.buy_cost_bps if side == "BUY" else self.sell_cost_bps
        return max(self.min_cost, value * bps / 1e4)


def tradability(
    side: Side,
    *,
    open_: float,
    high: float,
    low: float,
    ref_close: float,
    threshold: float,
    suspended: bool,
) -> RejectCode | None:
    """Whether a side can trade at today's open; None when it can.

    An open at or above `ref_close x (1 + threshold)` rejects BUY (LIMIT_UP); at or below
    `ref_close x (1 - threshold)` rejects SELL (LIMIT_DOWN); a day locked at a limit
    (open == high == low) is unfillable either way (ONE_SIDED). `threshold <= 0` = none.
    """
    if suspended or not open_ > 0:
        return RejectCode.SUSPENDED
    if threshold <= 0 or not ref_close > 0:
        return None
    eps = 1e-9 * ref_close  # prices sit on a tick grid; ignore float noise at the threshold
    up = open_ >= ref_close * (1 + threshold) - eps
    down = open_ <= ref_close * (1 - threshold) + eps
    if (up or down) and open_ == high == low:
        return RejectCode.ONE_SIDED
    if up and side == "BUY":
        return RejectCode.LIMIT_UP
    if down and side == "SELL":
        return RejectCode.LIMIT_DOWN
    return None
