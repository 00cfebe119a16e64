"""Research tools and the submit tool as the model sees them: schemas plus masking.

Arguments are unmasked before they reach the data and results are masked before they
reach the model. Refusals are built from the submission's structure (the field, the rule,
what is allowed) and never quote what the model wrote: a quoted id or date, masked on its
way out, would tell the model the alias of a real ticker or the label of a real date.
Share counts the model writes are read through the step's `PriceScale` (rebased units
under rebased prices).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, ValidationError

from tradebench.agents.tools import (
    ArgumentError,
    SubmitTool,
    Tool,
    model_schema,
    parse_model,
    schema_issues,
)
from tradebench.benchmarks.portfolio import research
from tradebench.benchmarks.portfolio.account_check import account_problems
from tradebench.benchmarks.portfolio.context import PriceScale, StepContext
from tradebench.benchmarks.portfolio.submit_schema import (
    MAX_SHARES,
    OVERALL_CHARS,
    REASON_CHARS,
    SubmitLimits,
    action_schema,
)
from tradebench.benchmarks.portfolio.sure_match import surely_matches
from tradebench.errors import ToolError
from tradebench.llm.types import ToolSpec
from tradebench.market.orders import Action, Order
from tradebench.masking import Masker

ID = {"type": "string", "maxLength": 24}


class SubmitOrder(BaseModel):
    """One order as the model writes it (identifiers as shown to it).

    Sizes and confidence are unbounded here: `submit_tool` checks their ranges and refuses
    each one outside with its own code (`OUT_OF_RANGE`), naming the field and the range.
    """

    stock_id: str
    side: Literal["BUY", "SELL"]
    target_weight: float | None = None
    shares: int | None = None
    confidence: float
    reason: str = Field(min_length=REASON_CHARS[0], max_length=REASON_CHARS[1])


class SubmitAction(BaseModel):
    """The day's decision as the model writes it."""

    orders: list[SubmitOrder] = Field(default_factory=list)
    """No cap on the number of orders (the protocol sets none)."""
    overall_reason: str = Field(min_length=OVERALL_CHARS[0], max_length=OVERALL_CHARS[1])


ACCEPTED = Draft202012Validator(model_schema(SubmitAction))
"""What a submission must match before the coded checks (types, required fields)."""
RANGES = {
    "confidence": (0.0, 1.0),
    "target_weight": (0.0, 1.0),
    "shares": (1, MAX_SHARES),
}
"""The closed interval each number must lie in."""


@dataclass(frozen=True)
class Submission:
    """A validated submission: the action with real symbols and the orders as sent."""

    action: Action
    sent: SubmitAction


def _masked(masker: Masker, fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """`fn` behind the mask: identifier arguments unmasked by structure, the result and any
    error message masked (the tools' refusals never quote an argument, so masking rewrites
    only what the tools wrote)."""

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


def real_shares(ctx: StepContext, symbol: str, side: str, quantity: int) -> int:
    """The real shares of a quantity the model wrote for `symbol` (`PriceScale.shares`: as
    written under raw prices, rebased units in whole lots otherwise; 0: under one lot)."""
    held = ctx.held().get(symbol, 0) if side == "SELL" else 0
    return ctx.scale.shares(ctx.view.column(symbol), quantity, ctx.rules.lot_size, held)


def _orders(ctx: StepContext, raw: list[dict[str, Any]]) -> list[Order]:
    """Dry-run orders from already-unmasked `risk_check` arguments (an order of fewer units
    than one lot goes in as one share, which the broker refuses as `LOT_SIZE`)."""
    orders = []
    for o in raw:
        symbol = str(o["stock_id"])
        if o.get("shares"):
            shares = real_shares(ctx, symbol, o["side"], int(o["shares"]))
            size: dict[str, Any] = {"shares": max(shares, 1)}
        else:
            size = {"target_weight": ctx.scale.target_weight(float(o.get("target_weight") or 0.0))}
        orders.append(Order(stock_id=symbol, side=o["side"], **size))
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


class ResearchTool(Tool):
    """A research tool whose arguments, when they certainly match the schema
    (`sure_match.surely_matches`), skip the full validator; all others meet it as before."""

    def check(self, arguments: dict[str, Any]) -> None:
        """Validate arguments against the schema (`Tool.check`), a sure match at once."""
        if not surely_matches(self.spec.parameters, arguments):
            super().check(arguments)


RESEARCH_TOOLS = {name: ResearchTool(spec=spec, fn=dict) for name, spec in RESEARCH_SPECS.items()}
"""One compiled tool per schema; a step copies each with its own runner (`model_copy`
keeps the compiled argument check, so no step compiles a schema again)."""


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
        "risk_check": lambda a: research.risk_check(ctx, _orders(ctx, a["orders"])),
    }
    return [
        RESEARCH_TOOLS[n].model_copy(update={"fn": _masked(masker, fn)})
        for n, fn in runners.items()
    ]


class SubmitCode(StrEnum):
    """Why the benchmark's checks refused an order of a submission."""

    UNKNOWN_ID = "UNKNOWN_ID"
    SIZE = "SIZE"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    NOT_IN_UNIVERSE = "NOT_IN_UNIVERSE"
    NOT_IN_POOL = "NOT_IN_POOL"
    NOT_HELD = "NOT_HELD"
    SELL_AFTER_BUY = "SELL_AFTER_BUY"


Problem = tuple[SubmitCode, str]
UNKNOWN_ID_TEXT = "stock_id is not an id shown to you; use the ids listed"


def render_problems(problems: list[tuple[int, SubmitCode, str]]) -> str:
    """The refusal the model reads: one `orders/<i>: [CODE] rule` per problem. Every text
    comes from the checks' own words (the field, the rule, what is allowed), never from a
    value of the submission, so that masking has nothing of the model's to rewrite."""
    return "; ".join(f"orders/{i}: [{code}] {text}" for i, code, text in problems)


def _number(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def size_problems(order: SubmitOrder) -> list[Problem]:
    """Exactly one size, and every number inside its range (`RANGES`)."""
    out: list[Problem] = []
    if (order.target_weight is None) == (order.shares is None):
        out.append((SubmitCode.SIZE, "give exactly one of target_weight or shares"))
    for name, (lo, hi) in RANGES.items():
        value = getattr(order, name)
        if value is not None and not lo <= value <= hi:
            text = f"{name} is out of range; give a number from {_number(lo)} to {_number(hi)}"
            out.append((SubmitCode.OUT_OF_RANGE, text))
    return out


@dataclass(frozen=True)
class _Legal:
    """What a step allows: the universe, the candidate pool (None: no pool), the holdings."""

    universe: frozenset[str]
    buyable: frozenset[str] | None
    held: dict[str, int]

    def problems(self, order: SubmitOrder, symbol: str) -> list[Problem]:
        """Refusals of `order` on real `symbol` (worded without the id)."""
        if order.side == "SELL":
            held = symbol in self.held
            return [] if held else [(SubmitCode.NOT_HELD, "you hold no such stock to sell")]
        if symbol not in self.universe:
            return [(SubmitCode.NOT_IN_UNIVERSE, "stock_id is not in the tradable universe")]
        if self.buyable is not None and symbol not in self.buyable:
            text = "stock_id is not in today's candidate pool; buy only listed stocks"
            return [(SubmitCode.NOT_IN_POOL, text)]
        return []


def _order(order: SubmitOrder, symbol: str, shares: int | None, scale: PriceScale) -> Order:
    if shares is not None:
        size: dict[str, Any] = {"shares": shares}
    else:
        size = {"target_weight": scale.target_weight(order.target_weight or 0.0)}
    return Order(
        stock_id=symbol, side=order.side, confidence=order.confidence, reason=order.reason, **size
    )


def _parsed(arguments: dict[str, Any]) -> SubmitAction:
    """The submission's types and required fields checked; issues from the schema's and
    the model's own rules if not (`schema_issues`, `parse_model`: none quotes a value).

    A submission the model's strict rules take (exact JSON types, no coercion) matches
    `ACCEPTED` too, which is that model's own schema, and parses to the same action: it is
    taken at once; any other goes through the schema's check for its issues."""
    try:
        return SubmitAction.model_validate(arguments, strict=True)
    except ValidationError:
        pass
    issues = schema_issues(ACCEPTED, arguments)
    if issues:
        raise ArgumentError("submission does not match the submit_action schema", issues)
    return parse_model(SubmitAction, arguments)


def submit_tool(
    ctx: StepContext,
    masker: Masker,
    buyable: frozenset[str] | None = None,
    limits: SubmitLimits | None = None,
) -> SubmitTool:
    """`submit_action`: the schema shown (`submit_schema.action_schema`: the legal ids,
    one size per order, bounds from `limits`), then the benchmark's own checks, each
    refusal coded and worded from structure (`render_problems`). `buyable` restricts BUY
    orders to a candidate pool (fixed-candidate mode); `limits` default to a reply of
    `DEFAULT_MAX_TOKENS`. An order's `shares` is read through `real_shares`."""
    legal = _Legal(ctx.universe_set, buyable, ctx.held())
    buy = legal.universe if buyable is None else legal.universe & buyable
    schema = action_schema(
        masker.sorted_labels(buy),
        [masker.symbol_label(s) for s in legal.held],
        limits or SubmitLimits.for_tokens(None),
    )

    def validate(arguments: dict[str, Any]) -> Submission:
        sent = _parsed(arguments)
        problems: list[tuple[int, SubmitCode, str]] = []
        orders, seen_buy = [], False
        for i, o in enumerate(sent.orders):
            found = size_problems(o)
            if o.side == "SELL" and seen_buy:
                found.append((SubmitCode.SELL_AFTER_BUY, "put every SELL before every BUY"))
            seen_buy = seen_buy or o.side == "BUY"
            try:
                symbol = masker.unmask_symbol(o.stock_id)
            except ToolError:
                found.insert(0, (SubmitCode.UNKNOWN_ID, UNKNOWN_ID_TEXT))
            else:
                found += legal.problems(o, symbol)
                shares = None
                if not found and o.shares is not None:
                    shares = real_shares(ctx, symbol, o.side, o.shares)
                    if shares <= 0:
                        found.append((SubmitCode.SIZE, ctx.scale.too_small))
                if not found:
                    orders.append(_order(o, symbol, shares, ctx.scale))
            problems += [(i, code, text) for code, text in found]
        if not problems:  # each order legal alone: now the list against the account
            problems = list(account_problems(orders, ctx))
        if problems:
            raise ToolError(render_problems(problems))
        return Submission(
            action=Action(orders=orders, overall_reason=sent.overall_reason), sent=sent
        )

    spec = ToolSpec(
        name="submit_action", description="Submit today's orders (may be empty).", parameters=schema
    )
    return SubmitTool(spec=spec, accepts={}, validate_fn=validate)
