"""The portfolio benchmark as the harness runs it: its grid, its episodes, its records.

Grid: one index reference per window; every baseline x seed x window (modes and masks do
not apply to rule agents); every model x mode x mask x seed x window. Every episode goes
through the broker engine (`runs.broker.engine`): decisions before T's open from the
point-in-time view, fills at the open, marks at the close, one journal line per day.
"""

from __future__ import annotations

import logging
import re
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tradebench.agents.loop_types import LoopConfig
from tradebench.benchmarks.portfolio.agent import PortfolioLLMAgent
from tradebench.benchmarks.portfolio.capital import (
    default_capital,
    episode_lot_exposure,
    warn_if_lots_show,
)
from tradebench.benchmarks.portfolio.options import MODES, PortfolioOptions, resolve_price_mode
from tradebench.benchmarks.portfolio.prompt_files import load_prompts
from tradebench.data.dataset import Dataset
from tradebench.data.indexes import index_name
from tradebench.errors import ConfigError
from tradebench.llm.types import Usage
from tradebench.market.rules import MarketRules
from tradebench.registry import Spec
from tradebench.runs.axes import choice_axis, mask_axis
from tradebench.runs.broker.backtest import build_rule_agent, run_record, score
from tradebench.runs.broker.engine import (
    BacktestResult,
    benchmark_result,
    run_backtest,
    trading_days,
)
from tradebench.runs.broker.store import write_run
from tradebench.runs.protocol import EpisodeContext, EpisodeRef
from tradebench.runs.records import EpisodeRecord
from tradebench.runs.spec import RunSpec, Window
from tradebench.runs.summary import BROKER_COLUMNS, default_metrics

NAME = "portfolio"
log = logging.getLogger("tradebench.runs")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


def expand(spec: RunSpec, modes: list[str]) -> list[EpisodeRef]:
    """Every episode of the grid, in a stable order: per window the index reference, then
    per agent and seed the baseline, or the model under every mode and mask."""
    out: list[EpisodeRef] = []
    for w in spec.windows:
        out.append(
            EpisodeRef(id=f"benchmark_{w.span}", agent="benchmark", kind="benchmark", window=w)
        )
        for a in spec.agents:
            for seed in spec.seeds:
                if not a.is_llm:
                    ident = _slug(f"{a.name}_s{seed}_{w.span}")
                    out.append(
                        EpisodeRef(id=ident, agent=a.name, kind="baseline", seed=seed, window=w)
                    )
                    continue
                for mode in modes:
                    for mask in spec.masks:
                        out.append(
                            EpisodeRef(
                                id=_slug(f"{a.name}_{mode}_{mask}_s{seed}_{w.span}"),
                                agent=a.name,
                                kind="llm",
                                mode=mode,
                                mask=mask,
                                seed=seed,
                                window=w,
                            )
                        )
    return out


def warn_if_cut(dataset: Dataset, window: Window) -> None:
    """Say on screen when the data does not cover a window: its episodes run fewer days
    (the real first and last decision days are recorded in each episode)."""
    dates = dataset.panel.dates
    days = trading_days(dataset.panel, str(window.start), str(window.end))
    first, last = dates[days[0]], dates[days[-1]]
    if np.datetime64(window.end) > dates[-1] or np.datetime64(window.start) < dates[0]:
        log.warning(
            "window %s..%s is not covered by the data (%s..%s): its episodes run %d decision "
            "days, %s..%s",
            window.start,
            window.end,
            dates[0],
            dates[-1],
            len(days),
            first,
            last,
        )


def models_see_rebased_prices(spec: RunSpec, options: PortfolioOptions) -> bool:
    """Whether a model agent of the run trades under rebased prices in some mask."""
    rebased = any(
        resolve_price_mode(options.price_mode, mask) == "rebased"  # type: ignore[arg-type]
        for mask in spec.masks
    )
    return rebased and any(entry.is_llm for entry in spec.agents)


def step_cap(*caps: int | None) -> int | None:
    """The tightest of the given step caps (None = no cap)."""
    given = [c for c in caps if c is not None]
    return min(given) if given else None


def episode_window(ds: Dataset, window: Window, max_steps: int | None) -> tuple[str, str]:
    """The episode's (start, end), cut to `max_steps` trading days when set."""
    start, end = str(window.start), str(window.end)
    if max_steps is not None:
        days = trading_days(ds.panel, start, end)[:max_steps]
        end = str(ds.panel.dates[days[-1]])
    return start, end


class PortfolioBenchmark:
    """KTD-Fin's memory-controlled portfolio benchmark (modes x masks through the broker)."""

    name = NAME
    options_model = PortfolioOptions
    axes = (choice_axis("modes", MODES), mask_axis())
    """The three information modes and every mask level (the table's default levels when
    the spec omits `masks`)."""
    summary_columns = (*BROKER_COLUMNS, "price_mode", "lot_visible_share")
    broker_files = True
    resume_hints: ClassVar[dict[str, str]] = {
        "options.initial_cash": "a spec without initial_cash now gives a run with model "
        "episodes under rebased prices a capital that hides every lot (docs/portfolio.md); "
        "set options.initial_cash to the folder's figure to resume it as it was"
    }
    """Advice added to a refused rerun that names the key (`runs.guard.check_spec`)."""
    report_sections = ()
    """The broker sections of `tradebench report` cover this benchmark."""

    def resolve_options(
        self, spec: RunSpec, options: PortfolioOptions, dataset: Dataset
    ) -> PortfolioOptions:
        """The options with `initial_cash` set: the spec's, else `capital.default_capital`
        (a capital that hides every lot when model episodes see rebased prices)."""
        if options.initial_cash is not None or not spec.windows:
            return options
        hides = models_see_rebased_prices(spec, options)
        cash = default_capital(dataset, spec.windows, hides)
        return options.model_copy(update={"initial_cash": cash})

    def expand(
        self, spec: RunSpec, options: PortfolioOptions, dataset: Dataset
    ) -> list[EpisodeRef]:
        """The grid over the resolved spec's modes and masks (`axes`)."""
        if not spec.windows:
            raise ConfigError("the portfolio benchmark needs at least one entry in `windows`")
        modes = list(spec.modes)
        rules = MarketRules.for_market(dataset.market, initial_cash=options.capital)
        for window in spec.windows:
            warn_if_cut(dataset, window)
            if models_see_rebased_prices(spec, options):
                warn_if_lots_show(dataset, window, rules)
        for entry in spec.agents:  # an unknown baseline or bad arguments: before any episode
            if not entry.is_llm:
                build_rule_agent(entry.baseline or "", entry.args, rules)
        return expand(spec, modes)

    def summary_row(self, record: EpisodeRecord, folder: Any) -> dict[str, Any]:
        """The metric panel's columns, plus the price mode a model episode ran under."""
        return default_metrics(record, folder) | {
            "price_mode": record.extras.get("price_mode"),
            "lot_visible_share": record.extras.get("lot_visible_share"),
        }

    async def run_episode(self, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
        """Simulate the episode through the broker (resuming its journal) and write it."""
        opts: PortfolioOptions = ctx.options
        ds = ctx.dataset
        rules = MarketRules.for_market(ds.market, initial_cash=opts.capital)
        cap = step_cap(opts.max_steps, ctx.agent.max_steps if ctx.agent else None)
        start, end = episode_window(ds, ref.window, cap)
        extra: dict[str, Any] = {}
        if ref.kind == "benchmark" or ctx.agent is None:
            result = benchmark_result(ds, start, end, opts.capital)
            built = Spec(name="benchmark")
        elif ref.kind == "baseline":
            agent, built = build_rule_agent(ctx.agent.baseline or "", ctx.agent.args, rules)
            result = await run_backtest(
                ds, agent, start, end, rules, lambda i, n: ctx.on_step(), ctx.journal()
            )
            extra["baseline"] = {"name": built.name, "args": built.args}
        else:
            result, extra = await self._model_episode(ref, ctx, rules, start, end)
            built = Spec(name=ref.agent)
        window = (str(ref.window.start), str(ref.window.end))
        write_run(ctx.folder, result, score(result), run_record(built, *window, result, rules))
        days = pd.to_datetime(result.steps["date"])
        extra["decision_days"] = {
            "first": str(days.min().date()) if len(days) else None,
            "last": str(days.max().date()) if len(days) else None,
        }
        return ref.record(
            NAME, "done", initial_cash=opts.capital, n_steps=len(result.steps), **extra
        )

    async def _model_episode(
        self, ref: EpisodeRef, ctx: EpisodeContext, rules: MarketRules, start: str, end: str
    ) -> tuple[BacktestResult, dict[str, Any]]:
        opts: PortfolioOptions = ctx.options
        assert ctx.agent is not None and ctx.model is not None
        prompts = load_prompts(opts.prompt_version)
        config = ctx.agent.model_config_()
        price_mode = resolve_price_mode(opts.price_mode, ref.mask)  # type: ignore[arg-type]
        price = ctx.spec.budget.price_for(config)
        agent = PortfolioLLMAgent(
            model=ctx.model,
            price=price,
            mode=ref.mode,
            mask=ref.mask,  # type: ignore[arg-type]
            seed=ref.seed,
            episode_id=ref.id,
            symbols=ctx.dataset.panel.symbols,
            calendar=ctx.dataset.panel.dates,
            rules=rules,
            loop=LoopConfig(
                max_tool_calls=opts.max_tool_calls,
                max_submit_retries=opts.max_submit_retries,
                offer_submit_in_research=False,  # submission is its own phase
                sample_index=ref.seed,  # each seed is its own sample of the model
            ),
            price_mode=price_mode,
            candidates_k=opts.candidates_k,
            prompts=prompts,
            name=ref.agent,
            currency=ctx.dataset.manifest.currency,
            benchmark_name=index_name(ctx.dataset.manifest.index_symbol),
            answer_form=opts.resolved_answer_form(ref.mode),
            limit_filter=opts.resolved_limit_filter,
        )
        result = await run_backtest(
            ctx.dataset, agent, start, end, rules, lambda i, n: ctx.on_step(), ctx.journal()
        )
        used = Usage(
            input_tokens=int(result.steps["tokens_in"].fillna(0).sum()),
            output_tokens=int(result.steps["tokens_out"].fillna(0).sum()),
        )
        extra: dict[str, Any] = {
            "prompt_version": prompts.version,
            "prompt_sha256": prompts.sha256,
            "model": config.model_dump(mode="json"),
            "price_mode": price_mode,
            "answer_form": agent.answer_form,
            "limit_filter": agent.limit_filter,
            "max_tool_calls": opts.max_tool_calls,
            "tokens": used.input_tokens + used.output_tokens,
        }
        if price_mode == "rebased":
            exposure = episode_lot_exposure(ctx.dataset, start, end, rules)
            extra["lot_visible_share"] = exposure.visible_share
            extra["capital_to_hide_lots"] = exposure.capital_to_hide
        if price is not None:  # the steps' costs: cached input at the cache-read rate
            extra["cost_usd"] = float(result.steps["cost_usd"].fillna(0.0).sum())
        return result, extra


BENCHMARK = PortfolioBenchmark()
"""The registered instance."""
