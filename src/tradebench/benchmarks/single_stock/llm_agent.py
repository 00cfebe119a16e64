"""The LLM single-stock agent: one forced `submit_decision` call per decision day.

Each step is a fresh conversation (masked system prompt, masked daily message), so an
episode can resume at any step. An unusable reply gets up to `nudges` format nudges
(the tool loop's structured feedback); if none is accepted the step becomes `hold` and
counts against discipline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tradebench.agents.loop_types import LoopConfig, LoopResult
from tradebench.agents.tool_loop import run_tool_loop
from tradebench.agents.tools import SubmitTool
from tradebench.benchmarks.single_stock.agents import DecisionContext, StepDecision
from tradebench.benchmarks.single_stock.decision import DecisionArgs, submit_tool
from tradebench.benchmarks.single_stock.prompt_files import SUBMIT_TOOL
from tradebench.llm.base import ChatModel
from tradebench.runs.broker.rows import fault_values

EMPTY_REPLY = "empty reply"
"""Prefix of the adapters' `parse_error` for a reply with neither text nor a tool call."""


def loop_config(nudges: int, seed: int = 0) -> LoopConfig:
    """No research phase; the submit tool is forced with `nudges` retries; every call is
    sample `seed` of the model."""
    return LoopConfig(
        max_tool_calls=0,
        max_submit_retries=nudges,
        offer_submit_in_research=False,
        submit_prompt="Call `{submit}` now with today's decision.",
        sample_index=seed,
    )


def decision_from_loop(result: LoopResult) -> StepDecision:
    """Map a loop record to the step's decision, counters and masked trace."""
    args: DecisionArgs | None = result.action
    submits = [c for c in result.tool_calls if c.name == SUBMIT_TOOL]
    sent = args.action if args else (submits[-1].arguments.get("action") if submits else None)
    trace = {
        "messages": [m.model_dump(mode="json") for m in result.messages],
        "model_calls": [c.model_dump(mode="json") for c in result.model_calls],
        "tool_calls": [c.model_dump(mode="json") for c in result.tool_calls],
        "stop_reason": result.stop_reason,
        "fallback": result.fallback,
    }
    return StepDecision(
        action=args.action if args else "hold",
        valid=args is not None,
        sent=sent if isinstance(sent, str) else None,
        reason=args.reason if args else "",
        confidence=args.confidence if args else None,
        attempts=result.submission_attempts,
        nudges=result.retries,
        parse_failures=result.parse_failures,
        empty_replies=sum(
            (c.parse_error or "").startswith(EMPTY_REPLY) for c in result.model_calls
        ),
        tokens_in=result.usage.input_tokens,
        tokens_out=result.usage.output_tokens,
        **fault_values(result.faults),
        trace=trace,
    )


@dataclass
class SingleStockLLMAgent:
    """Decides through `run_tool_loop` with the forced submit tool."""

    model: ChatModel
    nudges: int = 1
    name: str = "llm"
    seed: int = 0
    """The episode's seed: the sample index of every call (cache key, provider seed)."""
    submit: SubmitTool = field(default_factory=submit_tool)

    async def decide(self, context: DecisionContext) -> StepDecision:
        """One forced submission (plus nudges) on the masked prompts."""
        result = await run_tool_loop(
            self.model,
            system=context.system,
            user=context.user,
            tools=[],
            submit=self.submit,
            config=loop_config(self.nudges, self.seed),
        )
        return decision_from_loop(result)
