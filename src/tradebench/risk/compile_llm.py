"""The optional LLM mandate compiler: one forced tool call whose schema is `RiskConstraints`.

The model is shown the mandate and must call `set_risk_constraints`; the arguments are
checked against the JSON Schema and then validated by pydantic (bounds and
contradictions). An invalid call is sent back to the model as a structured tool result
(what was wrong) and retried, up to `max_retries` times, by the shared tool loop; when no
attempt is accepted, `MandateCompileFailed` says why and carries the loop record.
Either way the raw call is kept: `CompiledMandate.call` is the `LoopResult`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tradebench.agents.loop_types import LoopConfig, LoopResult
from tradebench.agents.tool_loop import run_tool_loop
from tradebench.agents.tools import SubmitTool, model_schema, parse_model
from tradebench.errors import ConfigError, MandateError
from tradebench.llm.base import ChatModel
from tradebench.llm.types import ToolSpec
from tradebench.risk.constraints import (
    MAX_EXCLUDED,
    MAX_NAME_LENGTH,
    MAX_SECTOR_LENGTH,
    MAX_SECTORS,
    RiskConstraints,
    canonical_json,
    constraints_hash,
    render_constraints,
)

COMPILED_VERSION = 1
TOOL_NAME = "set_risk_constraints"
MAX_MANDATE_CHARS = 4000
SYSTEM_PROMPT = (
    "You translate an investment risk mandate into typed constraints. Call "
    f"`{TOOL_NAME}` once with exactly the constraints the mandate states. Weights are "
    "fractions of the portfolio's value (10% = 0.1); cash is 1 minus the sum of weights. "
    "Leave a field out (or null) when the mandate does not mention it; never invent a "
    "constraint."
)


class CompiledMandate(BaseModel):
    """A mandate compiled once: the text, the constraints, who compiled it, and how."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    schema_version: int = COMPILED_VERSION
    """Version of this record."""
    mandate: str
    """The mandate text as given."""
    constraints: RiskConstraints
    """The compiled constraints."""
    rendered: str
    """`render_constraints(constraints)`: the constraints read back as English."""
    compiler: Literal["grammar", "llm"]
    """`grammar` (`compile_mandate`) or `llm` (`compile_mandate_llm`)."""
    model: str | None = None
    """The model's `provider:model` label (llm compiler only)."""
    call: LoopResult | None = None
    """The raw model exchange: messages, calls, attempts, usage (llm compiler only)."""
    constraints_hash: str
    """`constraints_hash(constraints)`."""
    sha256: str
    """sha256 of `{"constraints": ..., "mandate": ...}` as sorted compact JSON: the same
    mandate compiled to the same constraints gives the same digest."""

    @classmethod
    def build(
        cls,
        mandate: str,
        constraints: RiskConstraints,
        *,
        compiler: Literal["grammar", "llm"],
        model: str | None = None,
        call: LoopResult | None = None,
    ) -> CompiledMandate:
        """The record of `mandate` compiled to `constraints` (digests and rendering filled)."""
        return cls(
            mandate=mandate,
            constraints=constraints,
            rendered=render_constraints(constraints),
            compiler=compiler,
            model=model,
            call=call,
            constraints_hash=constraints_hash(constraints),
            sha256=mandate_digest(mandate, constraints),
        )


class MandateCompileFailed(MandateError):
    """The model gave no valid constraints in any attempt; `call` is the loop record."""

    def __init__(self, message: str, call: LoopResult) -> None:
        """Keep the message and the loop record of the failed attempts."""
        super().__init__(message)
        self.call = call


def mandate_digest(mandate: str, constraints: RiskConstraints) -> str:
    """sha256 (hex) of the mandate text and its constraints together."""
    payload = json.dumps(
        {"constraints": json.loads(canonical_json(constraints)), "mandate": mandate},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class ToolLimits:
    """List lengths of the tool schema such that its longest reply fits `max_tokens`.

    Estimates, as for the portfolio submit schema: a number is 18 tokens (one per
    digit), a name or sector one token per character (the schema's patterns keep them
    ASCII), a key one token per two characters.
    """

    max_sectors: int
    """`maxItems` of `sector_caps` in the tool schema."""
    max_excluded: int
    """`maxItems` of `excluded` in the tool schema."""

    @classmethod
    def for_tokens(cls, max_tokens: int) -> ToolLimits:
        """The longest lists that fit: half the room left by the scalar fields for sector
        caps, the rest for excluded names, each within the model's own bounds.

        Raises:
            ConfigError: `max_tokens` cannot hold even the scalar fields.
        """
        room = max_tokens - FIXED_TOKENS
        if room < SECTOR_TOKENS + NAME_TOKENS:
            raise ConfigError(
                f"max_tokens {max_tokens} is too small for the mandate tool; give the model "
                f"at least {FIXED_TOKENS + SECTOR_TOKENS + NAME_TOKENS}"
            )
        sectors = min(MAX_SECTORS, room // 2 // SECTOR_TOKENS)
        names = min(MAX_EXCLUDED, (room - sectors * SECTOR_TOKENS) // NAME_TOKENS)
        return cls(max_sectors=sectors, max_excluded=names)

    def worst_case_tokens(self) -> int:
        """Estimated tokens of the longest reply the tool schema allows."""
        return FIXED_TOKENS + self.max_sectors * SECTOR_TOKENS + self.max_excluded * NAME_TOKENS


def _key_tokens(key: str) -> int:
    return math.ceil((len(key) + 4) / 2)  # "key": plus separators


NUMBER_TOKENS = 18
_LISTS = ("sector_caps", "excluded")
FIXED_TOKENS = (
    8
    + sum(
        _key_tokens(name) + (2 if field.annotation is bool else NUMBER_TOKENS)
        for name, field in RiskConstraints.model_fields.items()
        if name not in _LISTS
    )
    + sum(_key_tokens(name) + 2 for name in _LISTS)
)
"""Tokens of every scalar field at its longest, the braces and the lists' brackets."""
SECTOR_TOKENS = MAX_SECTOR_LENGTH + NUMBER_TOKENS + _key_tokens("sector") + _key_tokens("cap") + 4
"""Tokens of one `{"sector": ..., "cap": ...}` item at its longest."""
NAME_TOKENS = MAX_NAME_LENGTH + 3
"""Tokens of one excluded name at its longest, with quotes and comma."""


def mandate_tool(max_tokens: int = 1024) -> SubmitTool:
    """The forced tool: `RiskConstraints`' JSON Schema with its lists cut to what fits in
    `max_tokens` (`ToolLimits`); arguments are validated by pydantic."""
    limits = ToolLimits.for_tokens(max_tokens)
    schema = copy.deepcopy(model_schema(RiskConstraints))
    schema.pop("description", None)
    schema["properties"]["sector_caps"]["maxItems"] = limits.max_sectors
    schema["properties"]["excluded"]["maxItems"] = limits.max_excluded
    spec = ToolSpec(
        name=TOOL_NAME,
        description=(
            "Record the risk constraints the mandate states (omit what it does not mention)."
        ),
        parameters=schema,
    )
    return SubmitTool(spec=spec, validate_fn=lambda args: parse_model(RiskConstraints, args))


def last_problem(result: LoopResult) -> str:
    """The feedback the model got last: the error message and its issues, one line."""
    for message in reversed(result.messages):
        if message.role not in ("tool", "user"):
            continue
        try:
            error = json.loads(message.content).get("error")
        except (ValueError, AttributeError):
            continue
        if isinstance(error, dict):
            issues = [f"{i.get('path')}: {i.get('message')}" for i in error.get("issues") or []]
            return "; ".join([str(error.get("message")), *issues])
    return "no tool call"


async def compile_mandate_llm(
    model: ChatModel,
    text: str,
    *,
    max_retries: int = 2,
    sample_index: int = 0,
) -> CompiledMandate:
    """Compile a mandate with a model through one forced tool call (plus retries).

    The tool's lists are sized to `model.config.max_tokens` (`ToolLimits`): a mandate
    with more sector caps or excluded names than fit is rejected by the schema; raise
    `max_tokens` or use `compile_mandate`.

    Args:
        model: Any `ChatModel` (use `get_model` with a cache to make it replayable).
        text: The mandate in plain English.
        max_retries: Attempts after an invalid one; each gets the validation errors.
        sample_index: Sample index of the model calls (part of the cache key).

    Raises:
        MandateError: The mandate is empty or longer than `MAX_MANDATE_CHARS`.
        ConfigError: The model's `max_tokens` cannot hold the tool's reply.
        MandateCompileFailed: No attempt gave valid constraints (`.call` has the record).
        ProviderError, CacheMiss, LoopBudgetExceeded: From the model layer, unchanged.
    """
    if not text.strip():
        raise MandateError("the mandate is empty; write what the portfolio must respect")
    if len(text) > MAX_MANDATE_CHARS:
        raise MandateError(
            f"the mandate has {len(text)} characters; the LLM compiler takes at most "
            f"{MAX_MANDATE_CHARS}"
        )
    config = LoopConfig(
        max_tool_calls=0,
        max_submit_retries=max_retries,
        offer_submit_in_research=False,
        submit_prompt="Call `{submit}` now with the constraints of this mandate.",
        sample_index=sample_index,
    )
    result = await run_tool_loop(
        model,
        system=SYSTEM_PROMPT,
        user=f"Risk mandate:\n{text}",
        tools=[],
        submit=mandate_tool(model.config.max_tokens),
        config=config,
    )
    if not isinstance(result.action, RiskConstraints):
        raise MandateCompileFailed(
            f"{model.config.label} gave no valid risk constraints in "
            f"{result.submission_attempts} attempt(s); last problem: {last_problem(result)}; "
            "use compile_mandate (the grammar) or another model",
            result,
        )
    return CompiledMandate.build(
        text, result.action, compiler="llm", model=model.config.label, call=result
    )
