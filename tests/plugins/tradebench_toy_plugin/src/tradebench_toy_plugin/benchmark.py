"""`toy_plugin_switch`: every agent of the spec trades each window through tradebench's broker.

Rule and outside agents are built by name from tradebench's agent registry (this package's
`toy_plugin_first_n` among them); a model agent is asked each day whether to be invested
and holds the first symbols or cash accordingly. The episode's files, its record and its
summary row are the harness's own (`runs.broker`), so its folder and report read like a
portfolio run's.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from tradebench.agents.protocol import Decision, StepInfo
from tradebench.llm.base import ChatModel
from tradebench.llm.types import Message
from tradebench.market.ledger import AccountSnapshot
from tradebench.market.orders import Action, Order
from tradebench.market.rules import MarketRules
from tradebench.registry import Spec
from tradebench.runs.broker.backtest import build_rule_agent, run_record, score
from tradebench.runs.broker.engine import run_backtest
from tradebench.runs.broker.store import write_run
from tradebench.runs.protocol import EpisodeContext, EpisodeRef
from tradebench.runs.records import EpisodeRecord
from tradebench.runs.summary import BROKER_COLUMNS, default_metrics
from tradebench.view import MarketView
from tradebench_toy_plugin.agent import FirstNAgent

NAME = "toy_plugin_switch"


class SwitchOptions(BaseModel):
    """The benchmark's `options:` block."""

    model_config = ConfigDict(extra="forbid")

    initial_cash: float = Field(default=1_000_000.0, gt=0)
    n: int = Field(default=3, ge=1, description="symbols a model agent holds when invested")


class SwitchAgent:
    """Asks its model each day `invest or cash?`: invested means the first `n` symbols."""

    def __init__(self, model: ChatModel, n: int, lot_size: int, name: str, seed: int) -> None:
        """A model agent holding the first `n` symbols (whole lots) or cash."""
        self.model, self.name, self.seed = model, name, seed
        self.buyer = FirstNAgent(n=n, lot_size=lot_size)

    async def decide(self, view: MarketView, account: AccountSnapshot, step: StepInfo) -> Decision:
        """Ask, then buy (when in cash), sell everything (when invested) or hold."""
        ask = (
            f"Day {step.index} of {step.total}; return so far {step.cum_return:+.2%}. "
            "Answer with one word: invest or cash?"
        )
        reply = await self.model.generate(
            [Message(role="user", content=ask)], sample_index=self.seed
        )
        answer = reply.message.content.strip().lower()
        if answer == "invest":
            decision = await self.buyer.decide(view, account, step)
            action = decision.action
        elif answer == "cash" and account.symbols:
            orders = [
                Order(stock_id=s, side="SELL", shares=int(n))
                for s, n in zip(account.symbols, account.available, strict=True)
                if n > 0
            ]
            action = Action(orders=orders, overall_reason="the model chose cash")
        else:
            action = Action(overall_reason=f"the model said {answer!r}")
        return Decision(
            action=action,
            parse_failures=int(answer not in ("invest", "cash")),
            tokens_in=reply.usage.input_tokens,
            tokens_out=reply.usage.output_tokens,
        )


class SwitchBenchmark:
    """Each agent x seed x window, through the broker; no modes, masks do not apply."""

    name = NAME
    options_model = SwitchOptions
    axes = ()
    """No modes and no masks: a spec naming either is refused."""
    summary_columns = BROKER_COLUMNS
    broker_files = True
    report_sections = ()

    def expand(self, spec: Any, options: SwitchOptions, dataset: Any) -> list[EpisodeRef]:
        """Every episode, in spec order; an unknown agent fails here, before any episode."""
        rules = MarketRules.for_market(dataset.market, initial_cash=options.initial_cash)
        for entry in spec.agents:
            if not entry.is_llm:
                build_rule_agent(entry.agent, entry.args, rules)
        return [
            EpisodeRef(
                id=f"{a.name}_s{seed}_{w.span}",
                agent=a.name,
                kind="llm" if a.is_llm else "baseline",
                seed=seed,
                window=w,
            )
            for w in spec.windows
            for a in spec.agents
            for seed in spec.seeds
        ]

    async def run_episode(self, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
        """Trade the episode through the broker (resuming its journal) and write its files."""
        opts: SwitchOptions = ctx.options
        rules = MarketRules.for_market(ctx.dataset.market, initial_cash=opts.initial_cash)
        assert ctx.agent is not None
        extra: dict[str, Any] = {}
        if ctx.model is not None:
            agent: Any = SwitchAgent(ctx.model, opts.n, rules.lot_size, ref.agent, ref.seed)
            built = Spec(name=ref.agent)
            extra["model"] = ctx.agent.model_config_().model_dump(mode="json")
        else:
            agent, built = build_rule_agent(ctx.agent.agent or "", ctx.agent.args, rules)
            extra["baseline"] = {"name": built.name, "args": built.args}
        start, end = str(ref.window.start), str(ref.window.end)
        result = await run_backtest(
            ctx.dataset, agent, start, end, rules, lambda i, n: ctx.on_step(), ctx.journal()
        )
        write_run(ctx.folder, result, score(result), run_record(built, start, end, result, rules))
        if ctx.model is not None:
            used = result.steps[["tokens_in", "tokens_out"]].fillna(0).to_numpy().sum()
            extra["tokens"] = int(used)
        days = pd.to_datetime(result.steps["date"])
        extra["decision_days"] = {
            "first": str(days.min().date()) if len(days) else None,
            "last": str(days.max().date()) if len(days) else None,
        }
        return ref.record(
            NAME, "done", initial_cash=opts.initial_cash, n_steps=len(result.steps), **extra
        )

    def summary_row(self, record: EpisodeRecord, folder: Any) -> dict[str, Any]:
        """The harness's metric columns."""
        return default_metrics(record, folder)


BENCHMARK = SwitchBenchmark()
"""The instance the `tradebench.benchmarks` entry point names."""
