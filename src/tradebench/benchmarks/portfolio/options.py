"""Options and modes of the memory-controlled portfolio benchmark (the spec's `options:`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["memory_only", "fixed_candidate", "open_research"]
MODES: tuple[Mode, ...] = ("memory_only", "fixed_candidate", "open_research")
"""The three information modes, in display order."""


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
    price_mode: Literal["raw", "rebased"] = "raw"
    initial_cash: float = Field(default=1_000_000.0, gt=0)
    prompt_version: str = "v2"
    max_steps: int | None = Field(default=None, ge=1, description="cap on steps per episode")
