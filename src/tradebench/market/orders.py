"""Orders and actions (the agent's only way to act) and the records the broker writes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Side = Literal["BUY", "SELL"]


class RejectCode(StrEnum):
    """Why the broker refused (all or part of) an order."""

    NOT_IN_UNIVERSE = "NOT_IN_UNIVERSE"
    NO_POSITION = "NO_POSITION"
    T1_LOCKED = "T1_LOCKED"
    LIMIT_UP = "LIMIT_UP"
    LIMIT_DOWN = "LIMIT_DOWN"
    ONE_SIDED = "ONE_SIDED"
    SUSPENDED = "SUSPENDED"
    INSUFFICIENT_CASH = "INSUFFICIENT_CASH"
    LOT_SIZE = "LOT_SIZE"
    INVALID_ORDER = "INVALID_ORDER"


class Order(BaseModel):
    """One order: exactly one of `target_weight` (final weight of NAV at the previous
    close) or `shares` (an explicit quantity)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stock_id: str = Field(min_length=1, max_length=32, description="symbol (or alias)")
    side: Side = Field(description="BUY or SELL")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, description="0..1")
    reason: str = Field(default="", max_length=600, description="why this order")
    target_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    shares: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _exactly_one_size(self) -> Order:
        if (self.target_weight is None) == (self.shares is None):
            raise ValueError("give exactly one of target_weight or shares")
        return self


@lru_cache(maxsize=16_384)
def shares_order(stock_id: str, side: Side, shares: int) -> Order:
    """`Order(stock_id=..., side=..., shares=...)`, validated once per distinct triple.

    Orders are frozen values, so one instance can serve every step that sends the same
    order; a rebalancing baseline repeats the same small trades (8,517 orders, 808
    distinct, in the daily equal-weight job), and validation is most of their cost.
    """
    return Order(stock_id=stock_id, side=side, shares=shares)


class Action(BaseModel):
    """What an agent submits for one step; orders execute in the given order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    orders: list[Order] = Field(default_factory=list)
    overall_reason: str = Field(default="", max_length=2000)


@dataclass(frozen=True, slots=True)
class OrderRecord:
    """One order as executed: what was asked, what filled, and why not (if not)."""

    symbol: str
    side: Side
    requested_shares: int | None
    target_weight: float | None
    status: Literal["filled", "partial", "rejected"]
    filled_shares: int = 0
    fill_price: float | None = None
    cost: float = 0.0
    reject_code: RejectCode | None = None
    message: str = ""
    confidence: float | None = None
    reason: str = ""
