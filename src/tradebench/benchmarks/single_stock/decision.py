"""The decision a model sends: schema, the forced submit tool, and text-reply parsing."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, Field, ValidationError

from tradebench.agents.tools import SubmitTool
from tradebench.benchmarks.single_stock.ledger import Action
from tradebench.benchmarks.single_stock.prompt_files import SUBMIT_TOOL

MAX_REASON = 200
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class DecisionArgs(BaseModel):
    """One daily decision as the model sends it (bounded so forced output stays short)."""

    action: Action = Field(description="buy (long +1), sell (short -1) or hold (keep)")
    reason: str = Field(max_length=MAX_REASON, description="one short sentence")
    confidence: float = Field(ge=0.0, le=1.0, description="confidence from 0 to 1")


def submit_tool() -> SubmitTool:
    """The forced `submit_decision` tool (schema and validation from `DecisionArgs`)."""
    return SubmitTool.from_model(
        SUBMIT_TOOL, "Submit today's decision: buy, sell or hold.", DecisionArgs
    )


class UnreadableReply(ValueError):
    """A text reply that holds no valid decision; the message says why."""


def parse_reply_text(text: str) -> DecisionArgs:
    """The decision in a chat reply: a JSON object, bare, fenced or inside other text.

    Raises:
        UnreadableReply: Empty text, no JSON object, or an object that is not a valid
            decision (the message names the problem, for the nudge).
    """
    body = _FENCE.sub("", (text or "").strip())
    if not body:
        raise UnreadableReply("empty reply")
    match = _OBJECT.search(body)
    if match is None:
        raise UnreadableReply("no JSON object found")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise UnreadableReply(f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise UnreadableReply("the JSON is not an object")
    try:
        return DecisionArgs.model_validate(data)
    except ValidationError as exc:
        issues = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UnreadableReply(f"not a valid decision ({issues})") from None
