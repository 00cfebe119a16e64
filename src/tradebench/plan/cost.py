"""The plan's cost and time section: requests, tokens, cost and wall time of a spec's model
agents before anything is spent.

Per model agent: episodes (windows x modes x masks x seeds) times decision days per window
(weekdays, an upper bound; capped at the agent's `max_steps`) gives the steps; each step's
requests and tokens come from a previous run's traces where `--from` names one (its
measured model calls and usage per step, that agent's own where it ran, else all its
model agents'), else from the stated assumptions. The cost is priced from the spec's
table, else genai-prices' dated table (cached input tokens at the cache-read rate); a
model with no price says so, never 0. The wall time is the bound the agent's rate limits
set (`limits: {rpm, tpm}`), and, with a previous run, its measured seconds per request
spread over the spec's concurrency; the longer of the two.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from tradebench.benchmarks import get_benchmark
from tradebench.errors import ConfigError
from tradebench.llm.types import Usage
from tradebench.plan.core import PLAN_SECTIONS, PlanContext, PlanSection
from tradebench.runs.records import EPISODE_FILE
from tradebench.runs.spec import AgentEntry
from tradebench.runs.summary import episode_dirs
from tradebench.runs.trace import trace_lines

__all__ = ["StepLoad", "agent_load", "cost_section", "measured_load"]


@dataclass(frozen=True)
class StepLoad:
    """What one decision step asks of the endpoint, on average."""

    requests: float
    """Model requests per step."""
    input_tokens: float
    """Input tokens per step."""
    output_tokens: float
    """Output tokens per step."""
    cached_input_tokens: float = 0.0
    """Of the input tokens, those read from the provider's prompt cache."""
    seconds_per_request: float | None = None
    """Measured latency of one request (None: not measured)."""
    source: str = "assumed"
    """Where the numbers come from: `assumed` or the previous run folder."""


def measured_load(run_dir: Path, agent: str | None) -> StepLoad | None:
    """The mean step load of model episodes in a previous run folder (`agent`'s own when
    it ran there, else every model agent's); None when the folder holds no model steps."""
    usage, requests, steps, seconds = Usage(), 0, 0, 0.0
    by_agent: dict[str, list[dict]] = {}
    for folder in episode_dirs(Path(run_dir)):
        lines = trace_lines(folder) or []
        name = _episode_agent(folder)
        by_agent.setdefault(name, []).extend(lines)
    chosen = by_agent.get(agent or "") or [x for v in by_agent.values() for x in v]
    for line in chosen:
        calls = line.get("model_calls") or []
        steps += 1
        requests += len(calls)
        for call in calls:
            usage = usage + Usage.model_validate(call.get("usage") or {})
            seconds += float(call.get("latency_s") or 0.0)
    if steps == 0:
        return None
    return StepLoad(
        requests=requests / steps,
        input_tokens=usage.input_tokens / steps,
        output_tokens=usage.output_tokens / steps,
        cached_input_tokens=usage.cached_input_tokens / steps,
        seconds_per_request=seconds / requests if requests else None,
        source=str(run_dir),
    )


def _episode_agent(folder: Path) -> str:
    """The agent of an episode folder (its `episode.json`), or `?`."""
    try:
        return str(json.loads((folder / EPISODE_FILE).read_text(encoding="utf-8"))["agent"])
    except (OSError, ValueError, KeyError, TypeError):
        return "?"


def agent_load(context: PlanContext, agent: AgentEntry) -> StepLoad:
    """The step load of `agent`: measured in the previous run, else assumed."""
    previous = context.assumptions.previous
    if previous is not None:
        found = measured_load(previous, agent.name)
        if found is not None:
            return found
    a = context.assumptions
    per = a.requests_per_step
    return StepLoad(
        requests=per,
        input_tokens=per * a.input_tokens_per_request,
        output_tokens=per * min(a.output_tokens_per_request, agent.max_tokens),
    )


def _episodes(context: PlanContext, steps_cap: int | None) -> tuple[int, int]:
    """(episodes, steps) of one model agent over the grid."""
    spec = context.spec
    modes = len(spec.modes) or _benchmark_modes(spec.benchmark)
    per_window = [min(d, steps_cap) if steps_cap else d for d in context.window_days]
    cells = max(modes, 1) * len(spec.masks) * len(spec.seeds)
    return cells * len(per_window), cells * sum(per_window)


def _benchmark_modes(name: str) -> int:
    """The benchmark's own modes (what an empty `modes:` runs); 1 when it has none."""
    try:
        return max(len(get_benchmark(name).modes), 1)
    except ConfigError:  # an unknown benchmark fails in `run`, not in the plan
        return 1


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _rows(context: PlanContext, agent: AgentEntry) -> tuple[list[tuple[str, str]], list[str]]:
    """The rows and notes of one model agent."""
    episodes, steps = _episodes(context, agent.max_steps)
    load = agent_load(context, agent)
    requests = math.ceil(load.requests * steps)
    usage = Usage(
        input_tokens=round(load.input_tokens * steps),
        output_tokens=round(load.output_tokens * steps),
        cached_input_tokens=round(load.cached_input_tokens * steps),
    )
    quote = context.spec.budget.quote_for(agent.model_config_())
    cost = "unknown (no price for this model: add it to budget.prices)"
    if quote.price is not None:
        cost = f"${quote.price.cost(usage):,.2f}"
    name = agent.name
    rows = [
        (f"{name}: episodes x steps", f"{episodes:,} x {steps / max(episodes, 1):.0f}"),
        (f"{name}: requests", f"{requests:,}"),
        (f"{name}: input tokens", f"{usage.input_tokens:,}"),
        (f"{name}: output tokens", f"{usage.output_tokens:,}"),
        (f"{name}: cost", cost),
        (f"{name}: wall time", _wall(context, agent, requests, usage, load)),
    ]
    notes = [f"{name}: {quote.describe()}"]
    if load.source == "assumed":
        a = context.assumptions
        notes.append(
            f"{name}: assumed {a.requests_per_step:g} requests a step, "
            f"{a.input_tokens_per_request:,} input and "
            f"{min(a.output_tokens_per_request, agent.max_tokens):,} output tokens a request "
            "(--from RUN_DIR measures them)"
        )
    else:
        notes.append(
            f"{name}: per step as measured in {load.source}: {load.requests:.2f} requests, "
            f"{load.input_tokens:,.0f} input and {load.output_tokens:,.0f} output tokens"
        )
    return rows, notes


def _wall(
    context: PlanContext, agent: AgentEntry, requests: int, usage: Usage, load: StepLoad
) -> str:
    """The wall time: the rate limits' bound and the measured latency's, the longer."""
    parts: list[tuple[float, str]] = []
    limits = agent.limits
    if limits is not None and limits.rpm is not None:
        parts.append((requests / limits.rpm * 60, f"{limits.rpm} rpm"))
    if limits is not None and limits.tpm is not None:
        parts.append((usage.total / limits.tpm * 60, f"{limits.tpm:,} tpm"))
    if load.seconds_per_request is not None:
        spread = load.seconds_per_request * requests / context.spec.concurrency
        parts.append((spread, f"measured latency at concurrency {context.spec.concurrency}"))
    if not parts:
        return "not bounded here (no rate limits; --from RUN_DIR measures latency)"
    seconds, why = max(parts)
    return f"at least {_minutes(seconds)} ({why})"


@PLAN_SECTIONS.register("cost")
def cost_section(context: PlanContext) -> PlanSection | None:
    """Requests, tokens, cost and wall time of each model agent (None without any)."""
    agents = context.spec.llm_agents()
    if not agents:
        return None
    rows: list[tuple[str, str]] = []
    notes: list[str] = []
    for agent in agents:
        more, said = _rows(context, agent)
        rows += more
        notes += said
    return PlanSection(title="cost and time", rows=rows, notes=notes)
