"""Options and modes of the memory-controlled portfolio benchmark (the spec's `options:`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tradebench.benchmarks.portfolio.context import PriceMode
from tradebench.masking import MaskLevel, rebases_prices

Mode = Literal["memory_only", "fixed_candidate", "open_research"]
MODES: tuple[Mode, ...] = ("memory_only", "fixed_candidate", "open_research")
"""The three information modes, in display order."""


def resolve_price_mode(price_mode: PriceMode | None, mask: MaskLevel) -> PriceMode:
    """The price mode an episode runs under: the explicit setting, else `rebased` when the
    mask level rebases prices (its row in `MASK_TABLE`: a raw price level names a stock) and
    `raw` otherwise."""
    if price_mode is not None:
        return price_mode
    return "rebased" if rebases_prices(mask) else "raw"


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
    initial_cash: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="capital at the start of every episode; null = CNY 1,000,000, or, in a "
        "run with model episodes under rebased prices, the smallest 1-2-5 figure whose account "
        "grid hides every lot with room for prices to double (`capital.default_capital`); the "
        "resolved figure is written to the run folder's spec.yaml",
    )
    prompt_version: str = Field(
        default="v3",
        description="prompt files (`prompts/<version>/`); `v4` is the paper's protocol "
        "(every instruction it prints, JSON answers, the limit filter on candidates). The "
        "default stays `v3` because run folders record the resolved version and a rerun of a "
        "spec that names none must match it",
    )
    answer_form: Literal["json", "tool"] | None = Field(
        default=None,
        description="how memory-only and fixed-candidate answer: `json` (one pure JSON object "
        "in the reply, the paper's form) or `tool` (submit_action forced through tool_choice); "
        "null = the prompt version's form (json from v4, tool before). Open-research always "
        "submits through the forced tool",
    )
    limit_filter: bool | None = Field(
        default=None,
        description="leave names whose previous close sits at the upper (lower) price limit "
        "out of the BUY (SELL) candidates when candidates are built (the paper's filter; the "
        "fill refuses limit-locked orders either way); null = on from prompt version v4",
    )
    max_steps: int | None = Field(default=None, ge=1, description="cap on steps per episode")

    @model_validator(mode="after")
    def _json_needs_its_prompts(self) -> PortfolioOptions:
        if self.answer_form == "json" and not self.paper_protocol:
            raise ValueError(
                f"answer_form json needs prompt_version v4 or later (the prompts of "
                f"{self.prompt_version!r} ask for a submit_action call)"
            )
        return self

    def resolved_answer_form(self, mode: str) -> Literal["json", "tool"]:
        """The answer form of `mode`: open-research submits through the forced tool."""
        if mode == "open_research":
            return "tool"
        if self.answer_form is not None:
            return self.answer_form
        return "json" if self.paper_protocol else "tool"

    @property
    def capital(self) -> float:
        """The resolved `initial_cash` (set by `PortfolioBenchmark.resolve_options`)."""
        if self.initial_cash is None:
            raise ValueError("initial_cash is resolved when a run is planned; it is unset here")
        return self.initial_cash

    @property
    def resolved_limit_filter(self) -> bool:
        """Whether candidates leave out names at their price limit."""
        return self.paper_protocol if self.limit_filter is None else self.limit_filter

    @property
    def paper_protocol(self) -> bool:
        """Whether the prompt version is the paper's (`v4`) or later."""
        return _version_number(self.prompt_version) >= 4


def _version_number(version: str) -> int:
    digits = version.lstrip("v")
    return int(digits) if digits.isdigit() else 0
