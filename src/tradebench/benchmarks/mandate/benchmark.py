"""The mandate benchmark (OpenPM) as the harness runs it: grid, episodes, artefacts.

Grid, per window: one episode per reference baseline (`index_buy_and_hold`, `cash`); per
seed, pool size K and analyst set, every constructor (the `equal_weight` and
`score_weighted` baselines, every model agent that is not an analyst or the mandate
compiler) under every cadence. The pool is chosen when the first episode of a cell needs
it (`resolve.stored_pool`: the set's analysts' top-K, or the random control). An episode's
mode is `<cadence>_k<K>` (plus `_<set>` with several analyst sets) so the report never
pools different pools as seeds. Every episode trades through the same broker
(`target_agent.run_targets`, the engine's one day loop) under US rules with the options'
half-spread and commission.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.agents.loop_types import LoopConfig
from tradebench.benchmarks.mandate import artefacts, certificate, resolve
from tradebench.benchmarks.mandate.capture import CAPTURES_DIR, CaptureStore, pool_id
from tradebench.benchmarks.mandate.constructors import (
    Constructor,
    EqualWeight,
    LLMConstructor,
    ScoreWeighted,
)
from tradebench.benchmarks.mandate.decider import AllocatorDecider
from tradebench.benchmarks.mandate.options import CADENCES, MandateOptions
from tradebench.benchmarks.mandate.pool import PoolChoice, candidates, sector_map
from tradebench.benchmarks.mandate.report import REPORT_SECTIONS
from tradebench.benchmarks.mandate.target_agent import FixedTargets, Simulation, run_targets
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.files import write_parquet_atomic, write_text_atomic
from tradebench.llm.base import ChatModel
from tradebench.llm.types import Usage
from tradebench.market.rules import MarketRules
from tradebench.registry import Spec
from tradebench.risk import RiskConstraints
from tradebench.runs.axes import choice_axis
from tradebench.runs.broker.backtest import run_record, score
from tradebench.runs.broker.engine import BacktestResult, trading_days
from tradebench.runs.broker.store import write_run
from tradebench.runs.protocol import EpisodeContext, EpisodeRef
from tradebench.runs.records import EpisodeRecord
from tradebench.runs.spec import AgentEntry, RunSpec, Window
from tradebench.runs.summary import BROKER_COLUMNS, default_metrics
from tradebench.view import MarketView

NAME = "mandate"
CONSTRUCTORS = {"equal_weight": EqualWeight, "score_weighted": ScoreWeighted}
"""Rule constructors by baseline name (through the critic)."""
REFERENCES = ("index_buy_and_hold", "cash")
"""Reference baselines (straight to the broker, no critic)."""
MANDATE_FILE = resolve.MANDATE_FILE
COST_CURVE_FILE = "cost_curve.parquet"
ADHERENCE_FILE = "adherence.parquet"
PNL_FILE = "pnl_by_name.parquet"
LOO_FILE = "loo_spread.parquet"
BOOTSTRAP_FILE = "spread_bootstrap.parquet"
EW_REFERENCE_FILE = "ew_reference.parquet"
DRIFT_FILE = "drift.parquet"
STRESS_FILE = "stress_blank_top.parquet"
POOL_FILE = "pool.json"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


def _caps_sectors(c: RiskConstraints) -> bool:
    return c.max_sector_weight is not None or bool(c.sector_caps)


def market_rules(market: str, opts: MandateOptions) -> MarketRules:
    """The market's rules with the options' commission (US) and half-spread."""
    base = MarketRules.for_market(market, initial_cash=opts.initial_cash)
    if market == "us":
        base = replace(base, buy_cost_bps=opts.commission_bps, sell_cost_bps=opts.commission_bps)
    return replace(base, half_spread_bps=opts.half_spread_bps)


def _check_cutoffs(spec: RunSpec) -> None:
    for a in spec.agents:
        if a.knowledge_cutoff is not None and not a.is_llm:
            raise ConfigError(
                f"agent {a.name!r} declares a knowledge_cutoff but is a rule agent; rule "
                "agents have no training data (declare it on model agents only)"
            )


def _check_agents(spec: RunSpec, dataset: Dataset) -> None:
    known = (*CONSTRUCTORS, *REFERENCES)
    for a in spec.agents:
        if not a.is_llm and a.baseline not in known:
            raise ConfigError(
                f"agent {a.name!r}: the mandate benchmark knows the baselines {list(known)}"
            )
        if a.baseline == "index_buy_and_hold":
            index = dataset.manifest.index_symbol
            if not index or dataset.panel.column(index) < 0:
                raise ConfigError(
                    f"index_buy_and_hold needs the index {index!r} as a tradable symbol: "
                    "import the bars with --index-file pointing at the bars file too"
                )


def expand_grid(spec: RunSpec, opts: MandateOptions, dataset: Dataset) -> list[EpisodeRef]:
    """Every episode, in a stable order (see the module docstring)."""
    cadences = list(spec.modes) or list(CADENCES)
    if opts.mandate_compiler == "grammar":
        resolve.grammar_mandate(opts)  # fails here, before any episode
    sets = list(opts.sets())
    helpers = resolve.helper_agents(opts)
    constructors = [
        a for a in spec.agents if a.baseline not in REFERENCES and a.name not in helpers
    ]
    out: list[EpisodeRef] = []
    for w in spec.windows:
        days = trading_days(dataset.panel, str(w.start), str(w.end))
        if not len(days):
            raise ConfigError(f"window {w.span} has no trading day in the dataset")
        first = dataset.panel.dates[days[0]]
        have = len(candidates(dataset, MarketView(dataset, first)))
        if have < max(opts.pool_sizes):
            raise ConfigError(
                f"only {have} members have a price before {first}; lower the pool size "
                f"{max(opts.pool_sizes)}"
            )
        for a in spec.agents:
            if a.baseline in REFERENCES:
                ident = _slug(f"{a.name}_{w.span}")
                task = {"role": "reference", "reference": a.baseline}
                out.append(EpisodeRef(id=ident, agent=a.name, kind="baseline", window=w, task=task))
        for seed in spec.seeds:
            for k in opts.pool_sizes:
                for name in sets:
                    tag = f"_{name}" if len(sets) > 1 else ""
                    out += _constructor_cells(constructors, w, seed, k, name, tag, cadences)
    return out


def _constructor_cells(
    agents: list[AgentEntry],
    w: Window,
    seed: int,
    k: int,
    analyst_set: str,
    tag: str,
    cadences: list[str],
) -> list[EpisodeRef]:
    out = []
    for a in agents:
        for cadence in cadences:
            out.append(
                EpisodeRef(
                    id=_slug(f"{a.name}_{cadence}_k{k}{tag}_s{seed}_{w.span}"),
                    agent=a.name,
                    kind="llm" if a.is_llm else "baseline",
                    mode=f"{cadence}_k{k}{tag}",
                    seed=seed,
                    window=w,
                    task={
                        "role": "constructor",
                        "cadence": cadence,
                        "pool_size": k,
                        "analyst_set": analyst_set,
                    },
                )
            )
    return out


def _cutoffs(spec: RunSpec, ref: EpisodeRef, opts: MandateOptions) -> dict[str, date | None]:
    """The models behind an episode (its constructor, its set's model analysts) and the
    knowledge cutoff each declares on its spec agent."""
    names = set()
    if ref.kind == "llm":
        names.add(ref.agent)
    if ref.task.get("analyst_set"):
        names |= set(resolve.set_agents(opts, ref.task["analyst_set"]))
    return {n: spec.agent(n).knowledge_cutoff for n in sorted(names)}


def _certify(
    ref: EpisodeRef, ctx: EpisodeContext, sim: Simulation, captures: str | None
) -> certificate.EpisodeCertificate:
    """Audit what the episode was shown, write its `certificate.json` and the run table."""
    opts: MandateOptions = ctx.options
    dates = [str(pd.Timestamp(d).date()) for d in sim.result.steps["date"]]
    read = [(d, info.get("capture_sha256")) for d, info in zip(dates, sim.infos, strict=True)]
    folder = ctx.run_dir / captures if captures else ctx.run_dir / CAPTURES_DIR
    shown, bad, n_read = certificate.read_showings(folder, read)
    subject = certificate.EpisodeSubject(
        episode_id=ref.id,
        agent=ref.agent,
        window_start=ref.window.start,
        cutoffs=_cutoffs(ctx.spec, ref, opts),
        margin_months=opts.cutoff_margin_months,
    )
    cert = certificate.certify(ctx.dataset, subject, shown, bad, n_read)
    certificate.write_certificate(ctx.folder, cert)
    certificate.write_run_table(ctx.run_dir)
    return cert


def _days(ds: Dataset, window: Window, cap: int | None) -> np.ndarray:
    days = trading_days(ds.panel, str(window.start), str(window.end))
    return days[:cap] if cap is not None else days


def _first_day(ds: Dataset, window: Window) -> str:
    days = trading_days(ds.panel, str(window.start), str(window.end))
    return str(ds.panel.dates[days[0]])


def _helpers_of(ref: EpisodeRef, opts: MandateOptions) -> set[str]:
    names = set()
    if "analyst_set" in ref.task:
        names = set(resolve.set_agents(opts, ref.task["analyst_set"]))
    if opts.mandate_compiler == "llm" and opts.mandate_compiler_agent:
        names.add(opts.mandate_compiler_agent)
    return names


class MandateBenchmark:
    """OpenPM's point-in-time mandate benchmark through the broker."""

    name = NAME
    options_model = MandateOptions
    axes = (choice_axis("modes", CADENCES),)
    """Cadences are the modes; masks do not apply (the mandate is written in real names)."""
    summary_columns = (*BROKER_COLUMNS, "cadence", "pool_size", "analyst_set")
    """Its headline numbers (which depend on its options) follow these columns."""
    broker_files = True
    report_sections = REPORT_SECTIONS

    def expand(self, spec: RunSpec, options: MandateOptions, dataset: Dataset) -> list[EpisodeRef]:
        """The grid (cadences from the spec's `modes`, all when empty)."""
        if not spec.windows:
            raise ConfigError("the mandate benchmark needs at least one entry in `windows`")
        _check_agents(spec, dataset)
        _check_cutoffs(spec)
        resolve.check_helpers(spec, options)
        return expand_grid(spec, options, dataset)

    def summary_row(self, record: EpisodeRecord, folder: Path) -> dict[str, Any]:
        """The metric panel plus the mandate's headline numbers."""
        extras = record.extras
        return default_metrics(record, folder) | {
            "cadence": extras.get("cadence"),
            "pool_size": extras.get("pool_size"),
            "analyst_set": extras.get("analyst_set"),
            **(extras.get("headline") or {}),
        }

    async def run_episode(self, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
        """Simulate the episode (resuming its journal), write its tables and artefacts."""
        opts: MandateOptions = ctx.options
        with resolve.helper_models(ctx, _helpers_of(ref, opts)) as models:
            return await self._run(ref, ctx, models)

    async def _run(
        self, ref: EpisodeRef, ctx: EpisodeContext, models: dict[str, ChatModel]
    ) -> EpisodeRecord:
        opts: MandateOptions = ctx.options
        ds = ctx.dataset
        rules = market_rules(ds.market, opts)
        compiled = await resolve.stored_mandate(ctx.run_dir, opts, models)
        cap = opts.max_steps
        if ctx.agent is not None and ctx.agent.max_steps is not None:
            cap = min(cap or ctx.agent.max_steps, ctx.agent.max_steps)
        days = _days(ds, ref.window, cap)
        extra: dict[str, Any] = {
            "mandate": {
                "text": compiled.mandate,
                "compiler": compiled.compiler,
                "rendered": compiled.rendered,
                "constraints": compiled.constraints.model_dump(mode="json"),
                "constraints_hash": compiled.constraints_hash,
                "sha256": compiled.sha256,
            },
            "rules": rules.__dict__,
        }
        if ref.task.get("role") == "reference":
            sim = await self._reference(ref, ctx, rules, days)
            pool: list[str] = []
            sectors: dict[str, str] = {}
        else:
            sim, more = await self._constructor(ref, ctx, rules, days, compiled.constraints, models)
            pool, sectors = more["pool"], more["sectors"]
            extra |= more
        built = Spec(name=ctx.agent.baseline or ref.agent if ctx.agent else ref.agent)
        start, end = str(ref.window.start), str(ref.window.end)
        write_run(
            ctx.folder,
            sim.result,
            score(sim.result),
            run_record(built, start, end, sim.result, rules),
        )
        headline = await self._artefacts(ctx, ref, sim, rules, days, pool)
        if pool:
            headline |= self._drift(ctx, sim, compiled.constraints, sectors, pool)
        headline |= certificate.summary_fields(_certify(ref, ctx, sim, extra.get("captures")))
        steps = sim.result.steps
        extra["decision_days"] = {
            "first": str(pd.Timestamp(steps["date"].iloc[0]).date()),
            "last": str(pd.Timestamp(steps["date"].iloc[-1]).date()),
        }
        return ref.record(
            NAME,
            "done",
            initial_cash=opts.initial_cash,
            n_steps=len(steps),
            headline=headline,
            **extra,
        )

    async def _reference(
        self, ref: EpisodeRef, ctx: EpisodeContext, rules: MarketRules, days: np.ndarray
    ) -> Simulation:
        index = ctx.dataset.manifest.index_symbol or ""
        if ref.task["reference"] == "cash":
            targets: list[dict[str, float] | None] = []
        else:
            targets = [{index: 1.0}]
        return await run_targets(
            ctx.dataset,
            FixedTargets(targets),
            days,
            rules,
            frozenset({index}),
            ctx.journal(),
            ctx.on_step,
        )

    def _make_constructor(
        self, ref: EpisodeRef, ctx: EpisodeContext, rendered: str
    ) -> tuple[Constructor, dict[str, Any]]:
        assert ctx.agent is not None
        if not ctx.agent.is_llm:
            return CONSTRUCTORS[ctx.agent.baseline or ""](), {
                "baseline": {"name": ctx.agent.baseline, "args": {}}
            }
        assert ctx.model is not None
        opts: MandateOptions = ctx.options
        loop = LoopConfig(
            max_tool_calls=0,
            max_submit_retries=opts.max_submit_retries,
            offer_submit_in_research=False,
            sample_index=ref.seed,
        )
        config = ctx.agent.model_config_()
        return LLMConstructor(ctx.model, rendered, loop), {"model": config.model_dump(mode="json")}

    async def _pool(
        self, ref: EpisodeRef, ctx: EpisodeContext, models: dict[str, ChatModel]
    ) -> tuple[PoolChoice, list]:
        opts: MandateOptions = ctx.options
        name = ref.task["analyst_set"]
        sources = resolve.sources(opts, name, models)
        first = _first_day(ctx.dataset, ref.window)
        size = ref.task["pool_size"]
        choice = await resolve.stored_pool(ctx, first, size, ref.seed, name, sources)
        return choice, sources

    def _sectors(self, ctx: EpisodeContext, pool: list[str], c: RiskConstraints) -> dict[str, str]:
        opts: MandateOptions = ctx.options
        sectors = sector_map(ctx.dataset, pool, opts.unknown_sector)
        missing = sorted(set(pool) - set(sectors))
        if missing and _caps_sectors(c):
            raise ConfigError(
                f"the mandate caps sectors; no sector for {missing} (unknown_sector: error; "
                "use `own` or `shared` to give them one)"
            )
        return sectors

    async def _constructor(
        self,
        ref: EpisodeRef,
        ctx: EpisodeContext,
        rules: MarketRules,
        days: np.ndarray,
        constraints: RiskConstraints,
        models: dict[str, ChatModel],
    ) -> tuple[Simulation, dict[str, Any]]:
        opts: MandateOptions = ctx.options
        choice, sources = await self._pool(ref, ctx, models)
        pool = list(choice.names)
        sectors = self._sectors(ctx, pool, constraints)
        key = json.dumps([pool, resolve.set_key(opts, ref.task["analyst_set"])], sort_keys=True)
        folder = ctx.run_dir / CAPTURES_DIR / pool_id(len(pool), ref.seed, key)
        store = CaptureStore(folder, tuple(pool), tuple(sources))
        compiled = await resolve.stored_mandate(ctx.run_dir, opts, models)
        constructor, extra = self._make_constructor(ref, ctx, compiled.rendered)
        decider = AllocatorDecider(
            constructor,
            store,
            constraints,
            sectors,
            ref.task["cadence"],
            opts.drift_tolerance if opts.drift_control else None,
            rules.lot_size,
        )
        sim = await run_targets(
            ctx.dataset, decider, days, rules, frozenset(pool), ctx.journal(), ctx.on_step
        )
        steps = sim.result.steps
        used = Usage(
            input_tokens=int(steps["tokens_in"].fillna(0).sum()),
            output_tokens=int(steps["tokens_out"].fillna(0).sum()),
        )
        write_text_atomic(ctx.folder / POOL_FILE, choice.model_dump_json(indent=1) + "\n")
        extra |= {
            "pool": pool,
            "pool_size": len(pool),
            "pool_rule": choice.rule,
            "analyst_set": ref.task["analyst_set"],
            "sectors": sectors,
            "unknown_sector": sorted(n for n, sec in sectors.items() if sec.startswith("unknown")),
            "cadence": ref.task["cadence"],
            "captures": str(folder.relative_to(ctx.run_dir)),
            "analyst_tokens": _analyst_tokens(folder, sim.infos, sim.result.steps["date"]),
        }
        if ref.kind == "llm" and ctx.agent is not None:
            extra["tokens"] = used.input_tokens + used.output_tokens
            price = ctx.spec.budget.price_for(ctx.agent.model_config_())
            if price is not None:
                extra["cost_usd"] = price.cost(used)
        return sim, extra

    def _drift(
        self,
        ctx: EpisodeContext,
        sim: Simulation,
        constraints: RiskConstraints,
        sectors: dict[str, str],
        pool: list[str],
    ) -> dict[str, Any]:
        """Write the held-book drift table; its headline numbers."""
        opts: MandateOptions = ctx.options
        table = artefacts.drift_table(
            sim.result, sim.infos, constraints, sectors, pool, opts.drift_tolerance
        )
        write_parquet_atomic(table, ctx.folder / DRIFT_FILE, index=False)
        return {
            "drift_days": int((table["breaches"] > 0).sum()),
            "drift_max_excess": float(table["max_excess"].max()),
            "drift_rebalances": int(table["drift_rebalance"].sum()),
        }

    async def _artefacts(
        self,
        ctx: EpisodeContext,
        ref: EpisodeRef,
        sim: Simulation,
        rules: MarketRules,
        days: np.ndarray,
        pool: list[str],
    ) -> dict[str, Any]:
        """Write the cost curve (every episode) and, for constructors, the adherence and
        robustness tables; returns the headline numbers."""
        opts: MandateOptions = ctx.options
        targets = [info.get("targets") for info in sim.infos]
        universe = frozenset(pool) if pool else frozenset({ctx.dataset.manifest.index_symbol or ""})
        rows = []
        for level in opts.cost_levels_bps:
            at = replace(
                rules, half_spread_bps=level, buy_cost_bps=0.0, sell_cost_bps=0.0, min_cost=0.0
            )
            again = await run_targets(ctx.dataset, FixedTargets(targets), days, at, universe)
            rows.append(artefacts.curve_row(again.result, level))
        curve = pd.DataFrame(rows)
        write_parquet_atomic(curve, ctx.folder / COST_CURVE_FILE, index=False)
        headline: dict[str, Any] = {
            "return_at_0bps": float(curve.loc[curve["cost_bps"] == 0, "total_return"].iloc[0]),
            "return_at_max_bps": float(curve["total_return"].iloc[-1]),
        }
        if not pool:
            return headline
        dates = sim.result.steps["date"].tolist()
        table = artefacts.adherence_table(sim.infos, dates)
        write_parquet_atomic(table, ctx.folder / ADHERENCE_FILE, index=False)
        rebalances = sum(bool(i.get("rebalance")) for i in sim.infos)
        ew = {n: 1.0 / len(pool) for n in pool}
        cadence = ref.task["cadence"]
        ew_targets = [ew if (cadence == "daily" or i == 0) else None for i in range(len(days))]
        reference = await run_targets(
            ctx.dataset, FixedTargets(ew_targets), days, rules, frozenset(pool)
        )
        write_parquet_atomic(
            reference.result.steps[["date", "nav"]], ctx.folder / EW_REFERENCE_FILE, index=False
        )
        by_name = artefacts.pnl_by_name(sim.result, reference.result, pool)
        write_parquet_atomic(by_name, ctx.folder / PNL_FILE, index=False)
        loo = artefacts.loo_spread(by_name, sim.result, reference.result)
        write_parquet_atomic(loo, ctx.folder / LOO_FILE, index=False)
        boot = artefacts.bootstrap_spread(
            sim.result, reference.result, opts.bootstrap_samples, opts.bootstrap_seed
        )
        write_parquet_atomic(boot, ctx.folder / BOOTSTRAP_FILE, index=False)
        returns = (_total_return(sim.result), _total_return(reference.result))
        stress = await self._stress(ctx, by_name, (targets, ew_targets), returns, days, rules)
        binding_steps = table.loc[table["binding"], "step"].nunique() if len(table) else 0
        spread, ret = boot.iloc[0], boot.iloc[1]
        headline |= {
            "spread_vs_ew": float(loo["spread"].iloc[0]),
            "ew_total_return": returns[1],
            # the bootstrap is of the summed daily spread, a different number from the
            # compounded `spread_vs_ew`: its estimate and interval travel together
            "daily_spread_sum": float(spread["estimate"]),
            "daily_spread_lo": float(spread["lo"]),
            "daily_spread_hi": float(spread["hi"]),
            "daily_return_sum": float(ret["estimate"]),
            "daily_return_lo": float(ret["lo"]),
            "daily_return_hi": float(ret["hi"]),
            "blank_top_name": stress["name"],
            "blank_top_spread": stress["blanked_spread"],
            "rebalances": rebalances,
            "binding_step_rate": binding_steps / rebalances if rebalances else None,
            "citation_violations": int(sum(i.get("citation_violations", 0) for i in sim.infos)),
            "invalid_proposals": int(sum(i.get("invalid_proposals", 0) for i in sim.infos)),
        }
        return headline

    async def _stress(
        self,
        ctx: EpisodeContext,
        by_name: pd.DataFrame,
        targets: tuple[list, list],
        returns: tuple[float, float],
        days: np.ndarray,
        rules: MarketRules,
    ) -> dict[str, Any]:
        """Blank the name of largest P&L contribution in the episode and in the reference
        (its weight left in cash), re-execute both; write `stress_blank_top.parquet`."""
        top = by_name.sort_values(["contribution", "symbol"], ascending=[False, True]).iloc[0]
        name = str(top["symbol"])
        pool = frozenset(by_name["symbol"])
        blanked = []
        for t in targets:
            plain = FixedTargets(artefacts.blank_targets(t, name))
            blanked.append(
                _total_return((await run_targets(ctx.dataset, plain, days, rules, pool)).result)
            )
        (mine, ew), runs = returns, {"": blanked[0], "ew_": blanked[1]}
        row = {
            "name": name,
            "contribution": float(top["contribution"]),
            "total_return": mine,
            "blanked_return": runs[""],
            "ew_total_return": ew,
            "ew_blanked_return": runs["ew_"],
            "spread": mine - ew,
            "blanked_spread": runs[""] - runs["ew_"],
        }
        write_parquet_atomic(pd.DataFrame([row]), ctx.folder / STRESS_FILE, index=False)
        return row


def _total_return(result: BacktestResult) -> float:
    return float(result.steps["nav"].iloc[-1]) / result.initial_cash - 1


def _analyst_tokens(folder: Path, infos: list[dict[str, Any]], dates: pd.Series) -> int:
    """Tokens of the model analysts' calls behind the captures this episode read."""
    total = 0
    for info, day in zip(infos, dates, strict=True):
        if info.get("capture_sha256"):
            path = folder / f"{pd.Timestamp(day).date()}.json"
            for call in json.loads(path.read_bytes()).get("analyst_calls", []):
                total += int(call["tokens_in"]) + int(call["tokens_out"])
    return total


BENCHMARK = MandateBenchmark()
"""The registered instance."""
