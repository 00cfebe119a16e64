"""Options and modes of the memory-controlled portfolio benchmark (the spec's `options:`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tradebench.benchmarks.portfolio.context import PriceMode
from tradebench.masking import MaskLevel, hides_stocks

Mode = Literal["memory_only", "fixed_candidate", "open_research"]
MODES: tuple[Mode, ...] = ("memory_only", "fixed_candidate", "open_research")
"""The three information modes, in display order."""


def resolve_price_mode(price_mode: PriceMode | None, mask: MaskLevel) -> PriceMode:
    """The price mode an episode runs under: the explicit setting, else `rebased` when the
    mask hides stocks (a raw price level names a stock) and `raw` otherwise."""
    if price_mode is not None:
        return price_mode
    return "rebased" if hides_stocks(mask) else "raw"


class PortfolioOptions(BaseModel):
    """The `options:` block of a `benchmark: portfolio` spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tool_calls: int = Field(
        default=64,
        ge=0,
        description="safety cap on research calls per step (the model calls as many as it "
        "deems necessary; a step that reaches the cap records it)",
    )
    max_submit_retries: int = Field(default=3, ge=0)
    candidates_k: int = Field(default=10, ge=1, description="top-k per factor in the table")
    price_mode: PriceMode | None = Field(
        default=None,
        description="`raw` price levels or `rebased` (100 = close before the episode); "
        "null = rebased under the masks that hide stocks, raw otherwise",
    )
    initial_cash: float = Field(default=1_000_000.0, gt=0, allow_inf_nan=False)
    prompt_version: str = "v3"
    max_steps: int | None = Field(default=None, ge=1, description="cap on steps per episode")
