"""The mandate benchmark (OpenPM) as the harness runs it: grid, episodes, artefacts.

Grid, per window: one episode per reference baseline (`index_buy_and_hold`, `cash`); per
seed and pool size K a pool (`pool.draw_pool`), and on it every constructor (the
`equal_weight` and `score_weighted` baselines, every model) under every cadence. An
episode's mode is `<cadence>_k<K>` so the report never pools different pools as seeds.
Every episode trades through the same broker (`loop.simulate`) under US rules with the
options' half-spread and commission.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.agents.loop_types import LoopConfig
from tradebench.benchmarks.mandate import artefacts, certificate
from tradebench.benchmarks.mandate.analysts import AnalystSettings
from tradebench.benchmarks.mandate.capture import CAPTURES_DIR, CaptureStore, pool_id
from tradebench.benchmarks.mandate.constructors import (
    Constructor,
    EqualWeight,
    LLMConstructor,
    ScoreWeighted,
)
from tradebench.benchmarks.mandate.decider import AllocatorDecider
from tradebench.benchmarks.mandate.loop import FixedTargets, Simulation, simulate
from tradebench.benchmarks.mandate.options import CADENCES, MandateOptions
from tradebench.benchmarks.mandate.pool import draw_pool, sector_map
from tradebench.benchmarks.mandate.report import REPORT_SECTIONS
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError, MandateError
from tradebench.files import write_bytes_atomic
from tradebench.llm.types import Usage
from tradebench.market.rules import MarketRules
from tradebench.registry import Spec
from tradebench.risk import CompiledMandate, RiskConstraints, compile_mandate
from tradebench.runs.backtest import run_record, score
from tradebench.runs.engine import trading_days
from tradebench.runs.protocol import EpisodeContext, EpisodeRef
from tradebench.runs.records import EpisodeRecord
from tradebench.runs.spec import RunSpec, Window
from tradebench.runs.store import write_run
from tradebench.runs.summary import default_metrics

NAME = "mandate"
CONSTRUCTORS = {"equal_weight": EqualWeight, "score_weighted": ScoreWeighted}
"""Rule constructors by baseline name (through the critic)."""
REFERENCES = ("index_buy_and_hold", "cash")
"""Reference baselines (straight to the broker, no critic)."""
MANDATE_FILE = "mandate.json"
COST_CURVE_FILE = "cost_curve.parquet"
ADHERENCE_FILE = "adherence.parquet"
PNL_FILE = "pnl_by_name.parquet"
LOO_FILE = "loo_spread.parquet"
BOOTSTRAP_FILE = "spread_bootstrap.parquet"
EW_REFERENCE_FILE = "ew_reference.parquet"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


def compile_options(opts: MandateOptions) -> CompiledMandate:
    """The run's mandate compiled by the grammar (ConfigError when it does not compile)."""
    try:
        return CompiledMandate.build(
            opts.mandate, compile_mandate(opts.mandate), compiler="grammar"
        )
    except MandateError as exc:
        raise ConfigError(f"options.mandate does not compile: {exc}") from None


def analyst_settings(opts: MandateOptions) -> AnalystSettings:
    """The analysts' settings from the options."""
    return AnalystSettings(opts.momentum_days, opts.news_lookback_days, opts.news_delay_minutes)


def _caps_sectors(c: RiskConstraints) -> bool:
    return c.max_sector_weight is not None or bool(c.sector_caps)


def market_rules(market: str, opts: MandateOptions) -> MarketRules:
    """The market's rules with the options' commission (US) and half-spread."""
    base = MarketRules.for_market(market, initial_cash=opts.initial_cash)
    if market == "us":
        base = replace(base, buy_cost_bps=opts.commission_bps, sell_cost_bps=opts.commission_bps)
    return replace(base, half_spread_bps=opts.half_spread_bps)


def _check_cutoffs(spec: RunSpec, opts: MandateOptions) -> None:
    models = {a.name for a in spec.llm_agents()}
    stray = sorted(set(opts.knowledge_cutoffs) - models)
    if stray:
        raise ConfigError(
            f"options.knowledge_cutoffs names {stray}, which are not model agents of the "
            f"spec (models: {sorted(models)}); rule agents have no knowledge cutoff"
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
    constraints = compile_options(opts).constraints
    out: list[EpisodeRef] = []
    for w in spec.windows:
        first = str(dataset.panel.dates[trading_days(dataset.panel, str(w.start), str(w.end))[0]])
        for a in spec.agents:
            if a.baseline in REFERENCES:
                ident = _slug(f"{a.name}_{w.span}")
                task = {"role": "reference", "reference": a.baseline}
                out.append(EpisodeRef(id=ident, agent=a.name, kind="baseline", window=w, task=task))
        for seed in spec.seeds:
            for k in opts.pool_sizes:
                pool = draw_pool(dataset, first, k, seed, opts.evidence_first)
                if _caps_sectors(constraints):
                    missing = sorted(set(pool) - set(sector_map(dataset, pool)))
                    if missing:
                        raise ConfigError(f"the mandate caps sectors; no sector for {missing}")
                out += _constructor_cells(spec, w, seed, k, pool, cadences)
    return out


def _constructor_cells(
    spec: RunSpec, w: Window, seed: int, k: int, pool: list[str], cadences: list[str]
) -> list[EpisodeRef]:
    out = []
    for a in spec.agents:
        if a.baseline in REFERENCES:
            continue
        for cadence in cadences:
            out.append(
                EpisodeRef(
                    id=_slug(f"{a.name}_{cadence}_k{k}_s{seed}_{w.span}"),
                    agent=a.name,
                    kind="llm" if a.is_llm else "baseline",
                    mode=f"{cadence}_k{k}",
                    seed=seed,
                    window=w,
                    task={"role": "constructor", "cadence": cadence, "pool_size": k, "pool": pool},
                )
            )
    return out


def stored_mandate(run_dir: Path, opts: MandateOptions) -> CompiledMandate:
    """The run's compiled mandate, written once to `RUN_DIR/mandate.json`."""
    compiled = compile_options(opts)
    path = Path(run_dir) / MANDATE_FILE
    if not path.exists():
        write_bytes_atomic(path, (compiled.model_dump_json(indent=2) + "\n").encode())
    return compiled


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
        is_model=ref.kind == "llm",
        window_start=ref.window.start,
        cutoff=opts.knowledge_cutoffs.get(ref.agent),
        margin_months=opts.cutoff_margin_months,
    )
    cert = certificate.certify(ctx.dataset, subject, shown, bad, n_read)
    certificate.write_certificate(ctx.folder, cert)
    certificate.write_run_table(ctx.run_dir)
    return cert


def _days(ds: Dataset, window: Window, cap: int | None) -> np.ndarray:
    days = trading_days(ds.panel, str(window.start), str(window.end))
    return days[:cap] if cap is not None else days


class MandateBenchmark:
    """OpenPM's point-in-time mandate benchmark through the broker."""

    name = NAME
    options_model = MandateOptions
    modes = CADENCES
    report_sections = REPORT_SECTIONS

    def expand(self, spec: RunSpec, options: MandateOptions, dataset: Dataset) -> list[EpisodeRef]:
        """The grid (cadences from the spec's `modes`, all when empty)."""
        if not spec.windows:
            raise ConfigError("the mandate benchmark needs at least one entry in `windows`")
        unknown = sorted(set(spec.modes) - set(CADENCES))
        if unknown:
            raise ConfigError(f"unknown modes {unknown}; the mandate cadences are {list(CADENCES)}")
        _check_agents(spec, dataset)
        _check_cutoffs(spec, options)
        return expand_grid(spec, options, dataset)

    def summary_row(self, record: EpisodeRecord, folder: Path) -> dict[str, Any]:
        """The metric panel plus the mandate's headline numbers."""
        extras = record.extras
        return default_metrics(record, folder) | {
            "cadence": extras.get("cadence"),
            "pool_size": extras.get("pool_size"),
            **(extras.get("headline") or {}),
        }

    async def run_episode(self, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
        """Simulate the episode (resuming its journal), write its tables and artefacts."""
        opts: MandateOptions = ctx.options
        ds = ctx.dataset
        rules = market_rules(ds.market, opts)
        compiled = stored_mandate(ctx.run_dir, opts)
        cap = opts.max_steps
        if ctx.agent is not None and ctx.agent.max_steps is not None:
            cap = min(cap or ctx.agent.max_steps, ctx.agent.max_steps)
        days = _days(ds, ref.window, cap)
        extra: dict[str, Any] = {
            "mandate": {
                "text": compiled.mandate,
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
        else:
            pool = list(ref.task["pool"])
            sim, more = await self._constructor(ref, ctx, rules, days, compiled.constraints)
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
        return await simulate(
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

    async def _constructor(
        self,
        ref: EpisodeRef,
        ctx: EpisodeContext,
        rules: MarketRules,
        days: np.ndarray,
        constraints: RiskConstraints,
    ) -> tuple[Simulation, dict[str, Any]]:
        opts: MandateOptions = ctx.options
        pool = list(ref.task["pool"])
        settings = analyst_settings(opts)
        key = json.dumps([pool, list(opts.analysts), settings.__dict__], sort_keys=True)
        folder = ctx.run_dir / CAPTURES_DIR / pool_id(len(pool), ref.seed, key)
        store = CaptureStore(folder, tuple(pool), tuple(opts.analysts), settings)
        constructor, extra = self._make_constructor(
            ref, ctx, stored_mandate(ctx.run_dir, opts).rendered
        )
        decider = AllocatorDecider(
            constructor, store, constraints, sector_map(ctx.dataset, pool), ref.task["cadence"]
        )
        sim = await simulate(
            ctx.dataset, decider, days, rules, frozenset(pool), ctx.journal(), ctx.on_step
        )
        steps = sim.result.steps
        used = Usage(
            input_tokens=int(steps["tokens_in"].fillna(0).sum()),
            output_tokens=int(steps["tokens_out"].fillna(0).sum()),
        )
        extra |= {
            "pool": pool,
            "pool_size": len(pool),
            "cadence": ref.task["cadence"],
            "captures": str(folder.relative_to(ctx.run_dir)),
        }
        if ref.kind == "llm" and ctx.agent is not None:
            extra["tokens"] = used.input_tokens + used.output_tokens
            price = ctx.spec.budget.price_for(ctx.agent.model_config_())
            if price is not None:
                extra["cost_usd"] = price.cost(used)
        return sim, extra

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
            again = await simulate(ctx.dataset, FixedTargets(targets), days, at, universe)
            rows.append(artefacts.curve_row(again.result, level))
        curve = pd.DataFrame(rows)
        curve.to_parquet(ctx.folder / COST_CURVE_FILE, index=False)
        headline: dict[str, Any] = {
            "return_at_0bps": float(curve.loc[curve["cost_bps"] == 0, "total_return"].iloc[0]),
            "return_at_max_bps": float(curve["total_return"].iloc[-1]),
        }
        if not pool:
            return headline
        dates = sim.result.steps["date"].tolist()
        table = artefacts.adherence_table(sim.infos, dates)
        table.to_parquet(ctx.folder / ADHERENCE_FILE, index=False)
        rebalances = sum(bool(i.get("rebalance")) for i in sim.infos)
        ew = {n: 1.0 / len(pool) for n in pool}
        cadence = ref.task["cadence"]
        ew_targets = [ew if (cadence == "daily" or i == 0) else None for i in range(len(days))]
        reference = await simulate(
            ctx.dataset, FixedTargets(ew_targets), days, rules, frozenset(pool)
        )
        reference.result.steps[["date", "nav"]].to_parquet(
            ctx.folder / EW_REFERENCE_FILE, index=False
        )
        by_name = artefacts.pnl_by_name(sim.result, reference.result, pool)
        by_name.to_parquet(ctx.folder / PNL_FILE, index=False)
        loo = artefacts.loo_spread(by_name, sim.result, reference.result)
        loo.to_parquet(ctx.folder / LOO_FILE, index=False)
        boot = artefacts.bootstrap_spread(
            sim.result, reference.result, opts.bootstrap_samples, opts.bootstrap_seed
        )
        boot.to_parquet(ctx.folder / BOOTSTRAP_FILE, index=False)
        binding_steps = table.loc[table["binding"], "step"].nunique() if len(table) else 0
        headline |= {
            "spread_vs_ew": float(loo["spread"].iloc[0]),
            # the bootstrap is of the summed daily spread, a different number from the
            # compounded `spread_vs_ew`: its estimate and interval travel together
            "daily_spread_sum": float(boot["estimate"].iloc[0]),
            "daily_spread_lo": float(boot["lo"].iloc[0]),
            "daily_spread_hi": float(boot["hi"].iloc[0]),
            "rebalances": rebalances,
            "binding_step_rate": binding_steps / rebalances if rebalances else None,
            "citation_violations": int(sum(i.get("citation_violations", 0) for i in sim.infos)),
            "invalid_proposals": int(sum(i.get("invalid_proposals", 0) for i in sim.infos)),
        }
        return headline


BENCHMARK = MandateBenchmark()
"""The registered instance."""
