"""The LLM portfolio agent: one masked tool loop (or JSON answer) per decision day.

Each step is a fresh conversation (system prompt for the mode, the shared user message),
so an episode can resume at any step. Everything the model sees passes through the
episode's `Masker`; the trace records the masked conversation only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tradebench.agents.json_answer import run_json_answer
from tradebench.agents.loop_types import LoopConfig, LoopResult
from tradebench.agents.protocol import Decision, StepInfo
from tradebench.agents.tool_loop import run_tool_loop
from tradebench.benchmarks.portfolio.context import PriceMode, StepContext
from tradebench.benchmarks.portfolio.limit_filter import buy_candidates, refuse_limit_down_sells
from tradebench.benchmarks.portfolio.observation import StepInfo as ObsStep
from tradebench.benchmarks.portfolio.observation import candidate_pool, user_message
from tradebench.benchmarks.portfolio.options import resolve_price_mode
from tradebench.benchmarks.portfolio.prompt_files import (
    AnswerForm,
    PromptSet,
    load_prompts,
    system_prompt,
)
from tradebench.benchmarks.portfolio.submit_schema import SubmitLimits
from tradebench.benchmarks.portfolio.tools import Submission, research_tools, submit_tool
from tradebench.llm.base import ChatModel
from tradebench.llm.prices import Price
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action
from tradebench.market.rules import MarketRules
from tradebench.masking import Masker, MaskLevel, build_masker
from tradebench.view import MarketView


@dataclass
class PortfolioLLMAgent:
    """Decides through `run_tool_loop` under one mode and one mask level."""

    model: ChatModel
    mode: str
    mask: MaskLevel
    seed: int
    episode_id: str
    symbols: np.ndarray
    calendar: np.ndarray
    rules: MarketRules = field(default_factory=MarketRules.cn)
    loop: LoopConfig = field(default_factory=LoopConfig)
    price_mode: PriceMode | None = None
    """`raw` or `rebased`; None: rebased when the mask hides stocks, raw otherwise."""
    candidates_k: int = 10
    prompts: PromptSet = field(default_factory=load_prompts)
    name: str = "llm"
    currency: str = "CNY"
    benchmark_name: str = "the benchmark index"
    """The benchmark as named in the user message (CSI300 for the CN universe)."""
    answer_form: AnswerForm = "tool"
    """`tool`: submit_action forced through tool_choice; `json`: one JSON object in the
    reply (`agents.json_answer`), no tools offered."""
    limit_filter: bool = False
    """Leave limit-up names out of the BUY candidates and refuse SELLs of limit-down names
    (`limit_filter`)."""
    price: Price | None = None
    """The model's price: each step's `cost_usd` (None: unknown)."""
    _masker: Masker | None = field(default=None, repr=False)
    _system: str | None = field(default=None, repr=False)

    def masker(self, first_day: Any) -> Masker:
        """The episode's masker (built once; aliases depend on seed and episode id)."""
        if self._masker is None:
            self._masker = build_masker(
                self.mask, self.symbols, self.calendar, first_day, self.seed, self.episode_id
            )
        return self._masker

    async def decide(self, view: MarketView, account: AccountSnapshot, step: StepInfo) -> Decision:
        """Run one masked tool loop and turn its submission into an action."""
        masker = self.masker(step.first_day)
        price_mode = resolve_price_mode(self.price_mode, self.mask)
        ctx = StepContext(
            view,
            account,
            self.rules,
            price_mode,
            rebase_close(view, step.first_day) if price_mode == "rebased" else None,
        )
        limits = SubmitLimits.for_tokens(self.model.config.max_tokens)  # the reply must fit
        if self._system is None:  # the same every step of the episode
            text = system_prompt(
                self.prompts, self.mode, self.rules, self.currency, limits, self.answer_form
            )
            self._system = masker.mask_text(text)
        system = self._system
        obs = ObsStep(step.index, step.total, step.previous, step.cum_return, step.bench_return)
        drawn = buy_candidates(ctx) if self.limit_filter else None
        pool = (
            candidate_pool(ctx, self.candidates_k, drawn)
            if self.mode == "fixed_candidate"
            else None
        )
        user = user_message(
            ctx,
            masker,
            self.prompts,
            self.mode,
            obs,
            self.candidates_k,
            self.benchmark_name,
            self.currency,
            drawn,
        )
        submit = submit_tool(ctx, masker, _buyable(ctx, pool, drawn), limits)
        if self.limit_filter:
            submit = refuse_limit_down_sells(submit, ctx, masker)
        if self.answer_form == "json":
            result = await run_json_answer(
                self.model, system=system, user=user, submit=submit, config=self.loop
            )
            return decision_from_loop(result, self.price)
        tools = research_tools(ctx, masker) if self.mode == "open_research" else []
        result = await run_tool_loop(
            self.model, system=system, user=user, tools=tools, submit=submit, config=self.loop
        )
        return decision_from_loop(result, self.price)


def _buyable(
    ctx: StepContext, pool: np.ndarray | None, drawn: np.ndarray | None
) -> frozenset[str] | None:
    """Symbols a BUY may name: the candidate pool (fixed-candidate) and the BUY candidates
    (limit filter), both where set; None: the whole universe."""
    sets = [frozenset(ctx.view.symbols[c].tolist()) for c in (pool, drawn) if c is not None]
    return frozenset.intersection(*sets) if sets else None


def rebase_close(view: MarketView, first_day: Any) -> np.ndarray:
    """Raw closes on the last day before the episode (the 100 of rebased prices)."""
    first = view.t + view.day_index(first_day)  # calendar position of the first decision day
    rows = view.window("close", view.t - first + 1)  # starts on the day before it
    return rows[0] if rows.shape[0] else np.full(len(view.symbols), np.nan)


def decision_from_loop(result: LoopResult, price: Price | None = None) -> Decision:
    """Map a loop record to a `Decision` with diagnostics and the masked trace; with a
    `price`, the step's cost: each model call priced on its own (its request tier, its
    cached input tokens at the cache-read rate)."""
    submission: Submission | None = result.action
    research = [c for c in result.tool_calls if c.phase == "research" and c.name != "submit_action"]
    trace = {
        "messages": [m.model_dump(mode="json") for m in result.messages],
        "tool_calls": [c.model_dump(mode="json") for c in result.tool_calls],
        "model_calls": [c.model_dump(mode="json") for c in result.model_calls],
        "stop_reason": result.stop_reason,
        "fallback": result.fallback,
        "submitted": None if submission is None else submission.sent.model_dump(mode="json"),
    }
    return Decision(
        action=submission.action if submission else Action(),
        parse_failures=result.parse_failures,
        tool_calls=len(research),
        tool_calls_valid=sum(c.valid for c in research),
        retries=result.retries,
        fallback=result.fallback,
        research_cap_hit=result.research_cap_hit,
        tokens_in=result.usage.input_tokens,
        tokens_out=result.usage.output_tokens,
        cost_usd=None
        if price is None
        else sum(price.request_cost(c.usage) for c in result.model_calls),
        faults=result.faults,
        sent_ids=tuple(o.stock_id for o in submission.sent.orders) if submission else (),
        trace=trace,
    )
