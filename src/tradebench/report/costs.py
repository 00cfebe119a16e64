"""The prices behind a run's costs, as the report states them.

A run's `budget.json` (`llm.budget.BudgetState`) records the price quote used for each
model: its source (the spec's table or genai-prices, with the package version, the day
whose prices were read and the day the price took effect) or that no price was known. A
cost that could not be priced is shown as `unknown`, never as 0.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from tradebench.llm.budget import BudgetState
from tradebench.llm.prices import PriceQuote
from tradebench.runs.records import BUDGET_FILE

UNKNOWN = "unknown"
"""How a cost without a price is shown."""
PRICE_COLUMNS = [
    "model",
    "source",
    "input $/MTok",
    "output $/MTok",
    "large requests",
    "priced on",
    "effective from",
    "matched as",
]

__all__ = ["PRICE_COLUMNS", "UNKNOWN", "cost_text", "price_quotes", "price_table"]


def price_quotes(run_dir: Path) -> list[PriceQuote]:
    """The price quotes recorded in `run_dir/budget.json`, by model label; empty when the
    file is absent or unreadable (a run without model calls writes none)."""
    path = Path(run_dir) / BUDGET_FILE
    if not path.exists():
        return []
    try:
        state = BudgetState.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return []
    return [state.prices[k] for k in sorted(state.prices)]


def _tiers(quote: PriceQuote) -> str:
    """The request tiers of a price as text (`>272,000 in: $5 / $22.5`), or empty."""
    if quote.price is None or not quote.price.tiers:
        return ""
    return "; ".join(
        f">{t.above_input_tokens:,} in: ${t.input_per_mtok:g} / ${t.output_per_mtok:g}"
        for t in quote.price.tiers
    )


def price_table(quotes: list[PriceQuote]) -> pd.DataFrame:
    """One row per model: the rates used and where and when they came from."""
    rows: list[dict[str, Any]] = []
    for q in quotes:
        genai = q.source == "genai-prices"
        rows.append(
            {
                "model": q.label,
                "source": q.source_version if genai else ("spec table" if q.known else UNKNOWN),
                "input $/MTok": q.price.input_per_mtok if q.price else UNKNOWN,
                "output $/MTok": q.price.output_per_mtok if q.price else UNKNOWN,
                "large requests": _tiers(q),
                "priced on": q.priced_on.isoformat() if genai and q.priced_on else "",
                "effective from": q.effective_from.isoformat() if q.effective_from else "",
                "matched as": q.matched or "",
            }
        )
    return pd.DataFrame(rows, columns=PRICE_COLUMNS)


def cost_text(value: Any, digits: int = 4) -> str:
    """A cost in USD as text; `unknown` when it is missing (no price)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return UNKNOWN
    return f"{float(value):,.{digits}f}"
