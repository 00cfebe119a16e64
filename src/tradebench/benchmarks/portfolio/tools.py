"""Research tools and the submit tool as the model sees them: schemas plus masking.

Arguments are unmasked before they reach the data and results are re-masked before
they reach the model, error messages included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from tradebench.agents.tools import SubmitTool, Tool
from tradebench.benchmarks.portfolio import research
from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.errors import ToolError
from tradebench.llm.types import ToolSpec
from tradebench.market.orders import Action, Order
from tradebench.masking import Masker

ID = {"type": "string", "maxLength": 24}


class SubmitOrder(BaseModel):
    """One order as the model writes it (identifiers as shown to it)."""

    stock_id: str = Field(max_length=24)
    side: Literal["BUY", "SELL"]
    target_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    shares: int | None = Field(default=None, gt=0, le=100_000_000)
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = Field(min_length=10, max_length=300)


class SubmitAction(BaseModel):
    """The day's decision as the model writes it."""

    orders: list[SubmitOrder] = Field(default_factory=list)
    """No cap on the number of orders (the protocol sets none)."""
    overall_reason: str = Field(min_length=20, max_length=600)


@dataclass(frozen=True)
class Submission:
    """A validated submission: the action with real symbols and the orders as sent."""

    action: Action
    sent: SubmitAction


def _masked(masker: Masker, fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """`fn` behind the mask: identifier arguments unmasked by structure, the result and any
    error message masked."""

    def run(arguments: dict[str, Any]) -> Any:
        try:
            return masker.mask(fn(masker.unmask_ids(arguments)))
        except ToolError as exc:
            raise ToolError(masker.mask_text(str(exc))) from None

    return run


def _spec(
    name: str, description: str, properties: dict[str, Any], required: list[str] | None = None
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": properties,
            "required": required or [],
            "additionalProperties": False,
        },
    )


def _orders(raw: list[dict[str, Any]]) -> list[Order]:
    """Dry-run orders from already-unmasked `risk_check` arguments."""
    orders = []
    for o in raw:
        size = (
            {"shares": int(o["shares"])}
            if o.get("shares")
            else {"target_weight": float(o.get("target_weight") or 0.0)}
        )
        orders.append(Order(stock_id=str(o["stock_id"]), side=o["side"], **size))
    return orders


ORDER_ITEM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["stock_id", "side"],
    "properties": {
        "stock_id": ID,
        "side": {"enum": ["BUY", "SELL"]},
        "target_weight": {"type": "number", "minimum": 0, "maximum": 1},
        "shares": {"type": "integer", "minimum": 1},
    },
}
RESEARCH_SPECS = {
    spec.name: spec
    for spec in (
        _spec(
            "get_market_context",
            "Index returns, breadth, limit hits and dispersion at the previous close.",
            {},
        ),
        _spec(
            "screen_candidates",
            "Rank the tradable universe by a feature.",
            {
                "feature": {"enum": list(research.SCREEN_FEATURES)},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 30},
                "ascending": {"type": "boolean"},
                "board": {"enum": ["main_sh", "main_sz", "chinext", "star", "beijing"]},
            },
            ["feature"],
        ),
        _spec(
            "get_stock_snapshot",
            "Recent bars, features, board, next-day limit prices, "
            "limit-hit warnings and your holding for one stock.",
            {"stock_id": ID, "lookback": {"type": "integer", "minimum": 1, "maximum": 30}},
            ["stock_id"],
        ),
        _spec(
            "compare_candidates",
            "2-10 stocks side by side with 60-day return correlations.",
            {"stock_ids": {"type": "array", "items": ID, "minItems": 2, "maxItems": 10}},
            ["stock_ids"],
        ),
        _spec("get_portfolio_state", "Cash, NAV and holdings with sellable shares.", {}),
        _spec(
            "risk_check",
            "Dry-run proposed orders through the trading rules on the state "
            "at the previous close: predicted rejections and costs.",
            {"orders": {"type": "array", "items": ORDER_ITEM}},
            ["orders"],
        ),
    )
}
"""The research tools' schemas: fixed, so built once."""


def research_tools(ctx: StepContext, masker: Masker) -> list[Tool]:
    """The six read-only tools of open-research mode, masked for this episode (each gets
    real identifiers; see `_masked`)."""
    runners: dict[str, Callable[[dict[str, Any]], Any]] = {
        "get_market_context": lambda a: research.get_market_context(ctx),
        "screen_candidates": lambda a: research.screen_candidates(
            ctx, a["feature"], a.get("top_k", 10), a.get("ascending", False), a.get("board")
        ),
        "get_stock_snapshot": lambda a: research.get_stock_snapshot(
            ctx, a["stock_id"], a.get("lookback", 10)
        ),
        "compare_candidates": lambda a: research.compare_candidates(ctx, a["stock_ids"]),
        "get_portfolio_state": lambda a: research.get_portfolio_state(ctx),
        "risk_check": lambda a: research.risk_check(ctx, _orders(a["orders"])),
    }
    return [Tool(spec=RESEARCH_SPECS[n], fn=_masked(masker, fn)) for n, fn in runners.items()]


class SubmitCode(StrEnum):
    """Why the benchmark's checks refused an order of a schema-valid submission."""

    UNKNOWN_ID = "UNKNOWN_ID"
    SIZE = "SIZE"
    NOT_IN_UNIVERSE = "NOT_IN_UNIVERSE"
    NOT_IN_POOL = "NOT_IN_POOL"
    NOT_HELD = "NOT_HELD"
    SELL_AFTER_BUY = "SELL_AFTER_BUY"


def _problem(i: int, code: SubmitCode, text: str) -> str:
    return f"orders/{i}: [{code}] {text}"


def submit_tool(
    ctx: StepContext, masker: Masker, buyable: frozenset[str] | None = None
) -> SubmitTool:
    """`submit_action`: schema, then the benchmark's constraints with coded, masked
    feedback. `buyable` restricts BUY orders to a candidate pool (fixed-candidate mode)."""

    def check(sent: SubmitAction) -> Submission:
        problems, orders, seen_buy = [], [], False
        held = ctx.held()
        for i, o in enumerate(sent.orders):
            try:
                symbol = masker.unmask_symbol(o.stock_id)
            except ToolError as exc:
                problems.append(_problem(i, SubmitCode.UNKNOWN_ID, str(exc)))
                continue
            if (o.target_weight is None) == (o.shares is None):
                text = "give exactly one of target_weight or shares"
                problems.append(_problem(i, SubmitCode.SIZE, text))
            if o.side == "BUY" and symbol not in ctx.universe_set:
                text = f"{o.stock_id} is not in the tradable universe"
                problems.append(_problem(i, SubmitCode.NOT_IN_UNIVERSE, text))
            elif o.side == "BUY" and buyable is not None and symbol not in buyable:
                text = f"{o.stock_id} is not in today's candidate pool; buy only listed stocks"
                problems.append(_problem(i, SubmitCode.NOT_IN_POOL, text))
            if o.side == "SELL" and symbol not in held:
                problems.append(_problem(i, SubmitCode.NOT_HELD, f"you hold no {o.stock_id}"))
            if o.side == "SELL" and seen_buy:
                text = "put every SELL before every BUY"
                problems.append(_problem(i, SubmitCode.SELL_AFTER_BUY, text))
            seen_buy = seen_buy or o.side == "BUY"
            if not problems:
                size = (
                    {"shares": o.shares}
                    if o.shares is not None
                    else {"target_weight": o.target_weight}
                )
                orders.append(
                    Order(
                        stock_id=symbol,
                        side=o.side,
                        confidence=o.confidence,
                        reason=o.reason,
                        **size,
                    )
                )
        if problems:
            raise ToolError(masker.mask_text("; ".join(problems)))
        return Submission(
            action=Action(orders=orders, overall_reason=sent.overall_reason), sent=sent
        )

    return SubmitTool.from_model(
        "submit_action", "Submit today's orders (may be empty).", SubmitAction, check
    )
