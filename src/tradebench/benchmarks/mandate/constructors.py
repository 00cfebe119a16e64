"""Constructors: read a capture, propose weights over the pool (the critic projects later).

Rule constructors: `equal_weight` (1/K each) and `score_weighted` (weights proportional to
`1 + s`, `s` the name's combined score from `analysts.combined_scores`, in [-1, 1]). The
LLM constructor calls the forced tool `propose_weights` through the shared tool loop: its
schema names the pool's names as an `enum` and bounds every weight to [0, 1]; the
benchmark's own checks refuse an unknown or repeated name, a weight out of range and a
total above 1 with a code (`ProposalCode`) the model sees and may fix. A proposal that
breaks the mandate is *not* refused here: the critic projects it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from jsonschema import Draft202012Validator

from tradebench.agents.loop_types import LoopConfig, LoopResult
from tradebench.agents.protocol import Decision
from tradebench.agents.tool_loop import run_tool_loop
from tradebench.agents.tools import ArgumentError, SubmitTool, schema_issues
from tradebench.benchmarks.mandate.analysts import combined_scores
from tradebench.benchmarks.mandate.capture import LoadedCapture
from tradebench.errors import ToolError
from tradebench.llm.base import ChatModel
from tradebench.llm.types import ToolSpec
from tradebench.market.orders import Action

TOOL_NAME = "propose_weights"
RATIONALE_CHARS = 400
SUM_TOL = 1e-6
SYSTEM_PROMPT = (
    "You are the portfolio constructor of a US equity mandate. Before the market opens you "
    "receive the analysts' frozen signals for a fixed pool of names and the risk mandate. "
    f"Call `{TOOL_NAME}` once with target weights over the pool: fractions of the "
    "portfolio's value (10% = 0.1), at most 1 in total; cash is 1 minus the total; a name "
    "left out is sold to zero. A risk critic moves your proposal to the nearest portfolio "
    "the mandate allows, so respect the mandate to keep your intent.\n\nRisk mandate:\n"
)


class ProposalCode(StrEnum):
    """Why a `propose_weights` call was refused."""

    SCHEMA = "SCHEMA"
    UNKNOWN_NAME = "UNKNOWN_NAME"
    DUPLICATE_NAME = "DUPLICATE_NAME"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    OVER_INVESTED = "OVER_INVESTED"


@dataclass(frozen=True)
class Proposal:
    """A constructor's proposal: weights (None: no valid proposal, hold) plus diagnostics."""

    weights: dict[str, float] | None
    rationale: str = ""
    decision: Decision = field(default_factory=lambda: Decision(action=Action()))
    trace: dict[str, Any] | None = None
    invalid: int = 0
    """Refused `propose_weights` calls."""
    codes: tuple[str, ...] = ()
    """Codes of the refusals, in order."""


class Constructor(Protocol):
    """Turns a capture and the current weights into a proposal."""

    async def propose(self, capture: LoadedCapture, current: dict[str, float]) -> Proposal:
        """The step's proposal."""
        ...


@dataclass(frozen=True)
class EqualWeight:
    """1/K on every name of the pool."""

    async def propose(self, capture: LoadedCapture, current: dict[str, float]) -> Proposal:
        """Equal weights over the capture's pool."""
        pool = capture.capture.pool
        return Proposal({n: 1.0 / len(pool) for n in pool}, "equal weight")


@dataclass(frozen=True)
class ScoreWeighted:
    """Weights proportional to `1 + combined score` (all names at 0 give equal weight)."""

    async def propose(self, capture: LoadedCapture, current: dict[str, float]) -> Proposal:
        """Score-tilted weights over the capture's pool."""
        pool = capture.capture.pool
        scores = combined_scores(capture.capture.signals, pool)
        raw = {n: max(0.0, 1.0 + scores[n]) for n in pool}
        total = sum(raw.values())
        if total <= 0:
            return Proposal({n: 1.0 / len(pool) for n in pool}, "equal weight (no scores)")
        return Proposal({n: raw[n] / total for n in pool}, "score weighted")


def proposal_schema(pool: list[str]) -> dict[str, Any]:
    """`propose_weights` arguments: up to K `{symbol in pool, weight in [0, 1]}` items."""
    item = {
        "type": "object",
        "properties": {
            "symbol": {"type": "string", "enum": sorted(pool)},
            "weight": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["symbol", "weight"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "weights": {"type": "array", "items": item, "maxItems": len(pool)},
            "rationale": {"type": "string", "maxLength": RATIONALE_CHARS},
        },
        "required": ["weights", "rationale"],
        "additionalProperties": False,
    }


_SHAPE = Draft202012Validator(
    {
        "type": "object",
        "properties": {
            "weights": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"symbol": {"type": "string"}, "weight": {"type": "number"}},
                    "required": ["symbol", "weight"],
                },
            },
            "rationale": {"type": "string"},
        },
        "required": ["weights"],
    }
)
"""What a call must match before the coded checks (types and required keys)."""


def check_proposal(arguments: dict[str, Any], pool: list[str]) -> tuple[dict[str, float], str]:
    """The weights and rationale of a call, or a `ToolError` whose message lists each
    problem as `[CODE] text`."""
    issues = schema_issues(_SHAPE, arguments)
    if issues:
        raise ArgumentError(f"[{ProposalCode.SCHEMA}] arguments do not match the schema", issues)
    weights: dict[str, float] = {}
    problems = []
    seen: set[str] = set()
    for i, item in enumerate(arguments["weights"]):
        name, w = str(item["symbol"]), float(item["weight"])
        repeated = name in seen
        seen.add(name)
        if name not in pool:
            problems.append(
                f"weights/{i}: [{ProposalCode.UNKNOWN_NAME}] {name[:24]} is not in the pool"
            )
        elif repeated:
            problems.append(f"weights/{i}: [{ProposalCode.DUPLICATE_NAME}] {name} is given twice")
        elif not 0.0 <= w <= 1.0:
            problems.append(
                f"weights/{i}: [{ProposalCode.OUT_OF_RANGE}] weight {w:g} is not in [0, 1]"
            )
        else:
            weights[name] = w
    total = sum(weights.values())
    if total > 1.0 + SUM_TOL:
        problems.append(f"[{ProposalCode.OVER_INVESTED}] weights sum to {total:.4f}; at most 1")
    if problems:
        raise ToolError("; ".join(problems))
    return weights, str(arguments.get("rationale", ""))


def proposal_tool(pool: list[str]) -> SubmitTool:
    """The forced `propose_weights` tool over `pool` (coded checks in `check_proposal`)."""
    spec = ToolSpec(
        name=TOOL_NAME,
        description="Propose today's target weights over the pool.",
        parameters=proposal_schema(pool),
    )
    return SubmitTool(spec=spec, accepts={}, validate_fn=lambda a: check_proposal(a, pool))


def user_message(capture: LoadedCapture, current: dict[str, float]) -> str:
    """The step's observation: the day, the current weights and the capture as written."""
    held = json.dumps({k: round(v, 4) for k, v in sorted(current.items())}, sort_keys=True)
    return (
        f"Decision day {capture.capture.date} (before the open).\n"
        f"Pool: {', '.join(capture.capture.pool)}.\n"
        f"Current weights at the last close: {held}.\n"
        f"Analyst capture (sha256 {capture.sha256}):\n{capture.data.decode('utf-8')}"
    )


def _codes(result: LoopResult) -> tuple[str, ...]:
    out = []
    for call in result.tool_calls:
        if call.name == TOOL_NAME and not call.valid and call.error:
            out += [c for c in ProposalCode if f"[{c}]" in call.error]
    return tuple(out)


@dataclass
class LLMConstructor:
    """A model behind the forced `propose_weights` tool."""

    model: ChatModel
    mandate_text: str
    loop: LoopConfig

    async def propose(self, capture: LoadedCapture, current: dict[str, float]) -> Proposal:
        """One forced tool call (plus coded retries); None weights when none is valid."""
        result = await run_tool_loop(
            self.model,
            system=SYSTEM_PROMPT + self.mandate_text,
            user=user_message(capture, current),
            tools=[],
            submit=proposal_tool(capture.capture.pool),
            config=self.loop,
        )
        submitted = result.action
        calls = [c for c in result.tool_calls if c.name == TOOL_NAME]
        decision = Decision(
            action=Action(),
            parse_failures=result.parse_failures,
            tool_calls=len(calls),
            tool_calls_valid=sum(c.valid for c in calls),
            retries=result.retries,
            fallback=result.fallback,
            research_cap_hit=False,
            tokens_in=result.usage.input_tokens,
            tokens_out=result.usage.output_tokens,
            faults=result.faults,
        )
        trace = {
            "messages": [m.model_dump(mode="json") for m in result.messages],
            "tool_calls": [c.model_dump(mode="json") for c in result.tool_calls],
            "model_calls": [c.model_dump(mode="json") for c in result.model_calls],
            "stop_reason": result.stop_reason,
            "fallback": result.fallback,
        }
        invalid = sum(not c.valid for c in calls)
        if submitted is None:
            return Proposal(None, "", decision, trace, invalid, _codes(result))
        weights, rationale = submitted
        return Proposal(weights, rationale, decision, trace, invalid, _codes(result))
