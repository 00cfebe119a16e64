"""The trading rules a model reads, written from the engine's `MarketRules`.

Every number in the rules text (capital, lot size, costs, limit thresholds) is filled in
from the rules object the broker applies, so the prompt and the engine cannot disagree.
"""

from __future__ import annotations

from tradebench.market.rules import MarketRules

BOARD_LABELS = {
    "main_sh": "the main board",
    "main_sz": "the main board",
    "chinext": "ChiNext",
    "star": "STAR",
    "beijing": "the Beijing exchange",
}
"""How each board is named in the rules text."""


def _number(value: float) -> str:
    """A rule's number as written: no trailing zeros, thousands separated."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.6g}"


def limits_phrase(thresholds: dict[str, float]) -> str:
    """`±9.5% on the main board, ±19.5% on ChiNext and STAR, ...` from the thresholds."""
    by_value: dict[float, list[str]] = {}
    for board, value in thresholds.items():
        label = BOARD_LABELS.get(board, board)
        labels = by_value.setdefault(value, [])
        if label not in labels:
            labels.append(label)
    parts = [
        f"±{_number(value * 100)}% on {' and '.join(labels)}"
        for value, labels in sorted(by_value.items())
    ]
    return ", ".join(parts) if parts else "no daily limit"


def rules_values(rules: MarketRules, currency: str) -> dict[str, str]:
    """The template fields of the rules text, each from `rules`."""
    return {
        "currency": currency,
        "initial_cash": _number(rules.initial_cash),
        "lot_size": _number(rules.lot_size),
        "buy_bps": _number(rules.buy_cost_bps),
        "sell_bps": _number(rules.sell_cost_bps),
        "min_cost": _number(rules.min_cost),
        "limits": limits_phrase(rules.limit_thresholds()),
    }


def constraints_line(rules: MarketRules, fixed_pool: bool) -> str:
    """The one-line reminder of the constraints in every user message."""
    parts = ["long-only"]
    if rules.t_plus_one:
        parts.append("T+1")
    parts.append(f"buy in lots of {_number(rules.lot_size)}")
    parts.append("buy only from the candidate table" if fixed_pool else "universe stocks only")
    parts += ["sell what you hold", "every SELL before every BUY"]
    return "; ".join(parts)
