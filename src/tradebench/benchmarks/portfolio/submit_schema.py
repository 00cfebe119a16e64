"""The `submit_action` schema as the model sees it: one a grammar can enforce and that fits
in the reply's token budget.

Local servers (llama.cpp) turn a forced tool's JSON Schema into a grammar that enforces
structure, `enum`, `pattern`, `required`, types, `maxLength` and `maxItems`, but not
`minimum`/`maximum`. So the schema

- lists `orders` first and requires it (a grammar writes properties in that order, and an
  optional `orders` after a long `overall_reason` is how a reply ends up empty or cut off);
- gives each order as one of up to four closed shapes, (BUY | SELL) x (`target_weight` |
  `shares`), so exactly one size is the only thing a grammar can write;
- names the legal ids of each side as an `enum` when they are few (the candidate pool for
  BUY in fixed-candidate mode, the holdings for SELL) and by their shape (`pattern`)
  otherwise; patterns use `[0-9]`, never `\\d` (llama.cpp's converter copies `\\d` into a
  literal its grammar parser refuses);
- bounds every string and the number of orders so that a grammar-forced reply stays inside
  `max_tokens` (`SubmitLimits`).

It follows the strict style of hosted providers (every object closed with
`additionalProperties: false`, every property required, `anyOf` below the root, no `oneOf`
and no `$ref`), and everything it states is checked again, with codes, by
`tools.submit_tool`: the schema helps a model write a valid submission, it is not what
decides validity.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

REASON_CHARS = (10, 300)
"""Accepted length of an order's `reason` (the schema shown may ask for less)."""
OVERALL_CHARS = (20, 600)
"""Accepted length of `overall_reason`."""
MAX_SHARES = 100_000_000
ENUM_MAX_IDS = 64
"""More legal ids than this are given by their shape, not listed (request size)."""
DEFAULT_MAX_TOKENS = 1024

# Token estimates of the worst reply a grammar allows (measured on SmolLM2's tokenizer,
# with the optional space after every bracket, key, colon and comma written).
ORDER_TOKENS = 40
"""Keys, quotes and punctuation of one order."""
ACTION_TOKENS = 18
"""Keys, quotes and punctuation around the orders and `overall_reason`."""
ID_TOKENS = 12
"""An id of up to 12 characters (one token per character)."""
NUMBER_TOKENS = 18
"""A number of up to 18 characters (one token per digit, e.g. `0.1234567890123456`)."""
TEXT_CHARS_PER_TOKEN = 2
"""Free text at two characters per token (English runs at four or more)."""

_ALIAS = re.compile(r"asset_([0-9]+)")
_A_SHARE = re.compile(r"(SH|SZ|BJ)[0-9]{6}")
A_SHARE_PATTERN = "^(SH|SZ|BJ)[0-9]{6}$"

Side = Literal["BUY", "SELL"]


@dataclass(frozen=True)
class SubmitLimits:
    """How much one submission may hold so that a grammar-forced reply fits `max_tokens`."""

    max_tokens: int
    """The reply's token cap the limits are sized for."""
    max_orders: int
    """`maxItems` of `orders` (at least 1, even when one order does not fit)."""
    reason_chars: int
    """`maxLength` of each order's `reason`."""
    overall_chars: int
    """`maxLength` of `overall_reason`."""

    @classmethod
    def for_tokens(cls, max_tokens: int | None) -> SubmitLimits:
        """Limits for a reply of `max_tokens` (None: `DEFAULT_MAX_TOKENS`): a tenth of it
        for each reason and a fifth for the overall reason (in characters, within fixed
        bounds), then as many orders as the rest holds at the worst-case estimates."""
        tokens = max_tokens or DEFAULT_MAX_TOKENS
        reason = min(max(tokens // 10, 24), 120)
        overall = min(max(tokens // 5, 40), 240)
        per_order = ORDER_TOKENS + ID_TOKENS + 2 * NUMBER_TOKENS + _text_tokens(reason)
        rest = tokens - ACTION_TOKENS - _text_tokens(overall)
        return cls(tokens, max(1, rest // per_order), reason, overall)

    def worst_case_tokens(self) -> int:
        """Estimated tokens of the longest reply the schema allows."""
        per_order = ORDER_TOKENS + ID_TOKENS + 2 * NUMBER_TOKENS + _text_tokens(self.reason_chars)
        return ACTION_TOKENS + _text_tokens(self.overall_chars) + self.max_orders * per_order

    def prompt_values(self) -> dict[str, int]:
        """The values the order-format prompt names."""
        return {
            "max_orders": self.max_orders,
            "max_tokens": self.max_tokens,
            "reason_chars": self.reason_chars,
            "overall_chars": self.overall_chars,
        }


def _text_tokens(chars: int) -> int:
    return math.ceil(chars / TEXT_CHARS_PER_TOKEN)


def id_schema(labels: Collection[str]) -> dict[str, Any]:
    """The ids a model may write: an `enum` of `labels` when they are few, else their shape
    (`asset_` plus fixed digits, an A-share code, or just the longest length)."""
    if len(labels) <= ENUM_MAX_IDS:
        return {"type": "string", "enum": sorted(labels)}
    return dict(_shape_schema(frozenset(labels)))


@functools.lru_cache(maxsize=512)
def _shape_schema(labels: frozenset[str]) -> dict[str, Any]:
    """The shape of many ids (remembered: a universe's ids are the same for many steps,
    and each episode has its own aliases, so room for a few hundred episodes in flight;
    callers get a copy)."""
    widths = {len(m.group(1)) if (m := _ALIAS.fullmatch(s)) else -1 for s in labels}
    if len(widths) == 1 and -1 not in widths:
        return {"type": "string", "pattern": f"^asset_[0-9]{{{widths.pop()}}}$"}
    if all(_A_SHARE.fullmatch(s) for s in labels):
        return {"type": "string", "pattern": A_SHARE_PATTERN}
    return {"type": "string", "minLength": 1, "maxLength": max(len(s) for s in labels)}


def _size(name: str) -> dict[str, Any]:
    if name == "shares":
        return {"type": "integer", "minimum": 1, "maximum": MAX_SHARES}
    return {"type": "number", "minimum": 0, "maximum": 1}


def order_shapes(ids: dict[Side, dict[str, Any]], limits: SubmitLimits) -> list[dict[str, Any]]:
    """One closed object per side with ids and per size (`target_weight` or `shares`)."""
    shapes = []
    for side, stock_id in ids.items():
        for size in ("target_weight", "shares"):
            properties = {
                "stock_id": stock_id,
                "side": {"type": "string", "enum": [side]},
                size: _size(size),
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "reason": {
                    "type": "string",
                    "minLength": REASON_CHARS[0],
                    "maxLength": limits.reason_chars,
                },
            }
            shapes.append(
                {
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                    "additionalProperties": False,
                }
            )
    return shapes


def action_schema(
    buy_ids: Collection[str], sell_ids: Collection[str], limits: SubmitLimits
) -> dict[str, Any]:
    """The `submit_action` arguments schema for one step.

    Args:
        buy_ids: The ids (as shown) the model may buy this step.
        sell_ids: The ids (as shown) it may sell: its holdings.
        limits: The token budget's bounds.
    """
    ids: dict[Side, dict[str, Any]] = {}
    if buy_ids:
        ids["BUY"] = id_schema(buy_ids)
    if sell_ids:
        ids["SELL"] = id_schema(sell_ids)
    shapes = order_shapes(ids, limits)
    none = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    orders = {
        "type": "array",
        "items": {"anyOf": shapes} if shapes else none,
        "maxItems": limits.max_orders if shapes else 0,
    }
    return {
        "type": "object",
        "properties": {
            "orders": orders,
            "overall_reason": {
                "type": "string",
                "minLength": OVERALL_CHARS[0],
                "maxLength": limits.overall_chars,
            },
        },
        "required": ["orders", "overall_reason"],
        "additionalProperties": False,
    }
