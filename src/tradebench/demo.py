"""`tradebench demo`: a small offline run on the embedded synthetic market, with a report.

Baselines (equal weight, momentum top-k, cash) and the benchmark index over 20 trading
days, in the fixed-candidate and open-research modes, blinded; plus a model when one is
given (`--model provider:name`) or when the local model extra is installed (a bundled tiny
model served by llama.cpp on loopback, its log kept in the run folder). No network and no
API key are needed for the default.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tradebench.benchmarks import build_report, run_spec
from tradebench.llm.local import LocalServer, find_bundled_model, free_cores, llama_cpp_available
from tradebench.llm.types import ModelConfig
from tradebench.report.episodes import code_counts, submission_rejections
from tradebench.report.load import load_run, read_episode_tables, read_trace
from tradebench.runs.progress import RunProgress
from tradebench.runs.spec import RunSpec

WINDOW = {"start": "2022-03-01", "end": "2022-03-29"}
LOCAL_SERVER_LOG = "local-model-server.log"
"""The bundled model server's output, in the run folder (named in its errors)."""
BASELINES: list[dict[str, Any]] = [
    {"name": "equal_weight", "baseline": "equal_weight"},
    {"name": "momentum_top20", "baseline": "momentum_topk", "args": {"k": 20}},
    {"name": "cash", "baseline": "cash"},
]
MODES = ("fixed_candidate", "open_research")
OPTIONS: dict[str, Any] = {"max_tool_calls": 3, "max_submit_retries": 2, "candidates_k": 2}
"""Research calls per decision, submission retries and candidates per factor: sized so the
bundled model's prompts stay short (it reads a few hundred tokens a second on two cores)."""
PROMPT_TOKENS = 2500
"""About the size of a demo prompt in tokens: the demo's requests, messages and tool
schemas counted with the bundled model's tokenizer, are 1,750-3,450 tokens (mean about
2,500), of which a call after the first of a step reads only what follows the prompt
before. With the measured reading speed, the time of one call before the first is made."""
TYPICAL_CALLS = {"fixed_candidate": 1, "open_research": 2}
"""Model calls of one decision when the model submits at once (open research: one reply
that ends research, then the submission)."""


@dataclass(frozen=True)
class DemoOptions:
    """What the demo runs."""

    out: Path
    seed: int = 0
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    """Variable holding the key of `model`'s endpoint (sent only when named)."""
    endpoint: str | None = None
    """Endpoint preset of `model` (`llm.presets`)."""
    local_model: bool = True
    model_steps: int = 2
    port: int | None = None
    """Port of the bundled model's server (None: a free one)."""
    threads: int | None = None
    """Threads of the bundled model's server (None: the cores not already busy)."""


@dataclass(frozen=True)
class DemoResult:
    """Where the demo wrote its files, the per-episode summary and what the model did."""

    run_dir: Path
    report: Path
    summary: pd.DataFrame
    model: str | None
    activity: pd.DataFrame
    """One row per model episode: `model_activity`."""


ACTIVITY_COLUMNS = [
    "mode",
    "steps",
    "model_calls",
    "research_calls",
    "research_valid",
    "submissions",
    "valid",
    "valid_non_empty",
    "rejected_by_code",
    "filled_orders",
]


def model_activity(run_dir: Path) -> pd.DataFrame:
    """What each model episode of a run did, from its masked trace and orders: model calls,
    research calls (and how many were valid), submission attempts, accepted ones (and
    those with at least one order), rejections by code, and orders the broker filled."""
    run = load_run(run_dir)
    rows = []
    for record in run.done().itertuples(index=False):
        trace = read_trace(run, record.episode_id) if record.kind == "llm" else None
        if trace is None:
            continue
        calls = [c for step in trace for c in step.get("tool_calls") or []]
        research = [c for c in calls if c.get("phase") == "research"]
        accepted = [s["submitted"] for s in trace if isinstance(s.get("submitted"), dict)]
        rejections = submission_rejections(trace)
        tables = read_episode_tables(run, record.episode_id)
        status = None if tables is None else tables.orders["status"]
        filled = 0 if status is None else int(status.isin(["filled", "partial"]).sum())
        rows.append(
            {
                "mode": record.mode,
                "steps": len(trace),
                "model_calls": sum(len(s.get("model_calls") or []) for s in trace),
                "research_calls": len(research),
                "research_valid": sum(bool(c.get("valid")) for c in research),
                "submissions": len(accepted) + len(rejections),
                "valid": len(accepted),
                "valid_non_empty": sum(bool(a.get("orders")) for a in accepted),
                "rejected_by_code": code_counts(rejections) or "-",
                "filled_orders": filled,
            }
        )
    return pd.DataFrame(rows, columns=ACTIVITY_COLUMNS)


@dataclass(frozen=True)
class DemoPlan:
    """What the demo is about to do, for the line printed before it starts."""

    model: str | None
    decisions: int
    """Model decision days in all (both modes)."""
    typical_calls: int
    """Model calls when every decision is submitted at once."""
    max_calls: int
    """Model calls when every decision uses every research call and retry."""
    threads: int | None = None
    """Threads of the bundled model's server (None: not the bundled model)."""
    seconds_per_call: float | None = None
    """Time of one demo-sized prompt at the reading speed measured on this machine
    (bundled model only)."""
    no_model_reason: str = ""
    """Why no model runs (empty when one does)."""

    @property
    def expected_s(self) -> float | None:
        """Seconds the model's calls should take (typical count x measured time)."""
        if self.seconds_per_call is None:
            return None
        return self.typical_calls * self.seconds_per_call


def calls_per_decision(mode: str) -> tuple[int, int]:
    """(typical, at most) model calls of one decision under the demo's options."""
    submit = 1 + OPTIONS["max_submit_retries"]
    if mode == "open_research":
        return TYPICAL_CALLS[mode], OPTIONS["max_tool_calls"] + 1 + submit
    return TYPICAL_CALLS[mode], submit


def demo_plan(opts: DemoOptions, entry: dict[str, Any] | None, **measured: Any) -> DemoPlan:
    """The demo's model workload: decisions and calls (typical and at most)."""
    if entry is None:
        reason = (
            "--no-local-model"
            if not opts.local_model
            else "the local-llm extra is not installed; pass --model to use another"
        )
        return DemoPlan(None, 0, 0, 0, no_model_reason=reason)
    counts = [calls_per_decision(m) for m in MODES]
    return DemoPlan(
        model=entry["name"],
        decisions=opts.model_steps * len(MODES),
        typical_calls=opts.model_steps * sum(t for t, _ in counts),
        max_calls=opts.model_steps * sum(m for _, m in counts),
        **measured,
    )


def demo_spec(opts: DemoOptions, model_entry: dict[str, Any] | None) -> RunSpec:
    """The demo's run spec: baselines, plus one model agent on a short blinded grid."""
    agents = list(BASELINES) + ([model_entry] if model_entry else [])
    return RunSpec.model_validate(
        {
            "dataset": f"synthetic:cn:{opts.seed}",
            "windows": [WINDOW],
            "modes": list(MODES),
            "masks": ["blinded"],
            "seeds": [opts.seed],
            "agents": agents,
            # one episode at a time: a local server answers one request at a time, and a
            # queue behind it would spend the requests' timeouts waiting
            "concurrency": 1 if opts.model is None else 2,
            "options": OPTIONS,
        }
    )


@contextlib.contextmanager
def model_entry(opts: DemoOptions) -> Iterator[tuple[dict[str, Any] | None, DemoPlan]]:
    """The model agent entry and the demo's plan (starting the bundled local model server,
    and timing one prompt-sized request on it, if that model is used)."""
    if opts.model:
        cfg = ModelConfig.parse(
            opts.model,
            base_url=opts.base_url,
            api_key_env=opts.api_key_env,
            endpoint=opts.endpoint,
        )
        entry = {
            "name": cfg.model.replace("/", "_")[:40],
            "provider": cfg.provider,
            "model": cfg.model,
            "base_url": cfg.base_url,
            "api_key_env": cfg.api_key_env,
            "endpoint": cfg.endpoint,
            "max_tokens": 400,
            "max_steps": opts.model_steps,
        }
        yield entry, demo_plan(opts, entry)
        return
    if not (opts.local_model and llama_cpp_available()):
        yield None, demo_plan(opts, None)
        return
    opts.out.mkdir(parents=True, exist_ok=True)
    log = opts.out / LOCAL_SERVER_LOG
    threads = opts.threads or free_cores()
    with LocalServer(
        find_bundled_model(), n_ctx=8192, n_threads=threads, port=opts.port, log_path=log
    ) as server:
        entry = {
            "name": "local_tiny_model",
            "provider": "openai",
            "model": server.alias,
            "base_url": server.base_url,
            "max_tokens": 400,
            "max_steps": opts.model_steps,
            "timeout_s": 900,  # a long prompt on a busy machine takes minutes, not seconds
            "max_attempts": 2,
        }
        rate = server.reading_speed(prompt_words=150)
        seconds = PROMPT_TOKENS / rate
        yield entry, demo_plan(opts, entry, threads=threads, seconds_per_call=seconds)


def run_demo(
    opts: DemoOptions,
    progress: RunProgress | None = None,
    on_plan: Callable[[DemoPlan], None] | None = None,
) -> DemoResult:
    """Run the demo grid into `opts.out` (resumable), then write the HTML report.

    `progress` receives the run's counters (episodes, steps, model calls) as they move;
    `on_plan` is told the plan (with the measured speed of the bundled model) before the
    first episode starts."""
    run_dir = Path(opts.out)
    with model_entry(opts) as (entry, plan):
        if on_plan is not None:
            on_plan(plan)
        summary_path = asyncio.run(run_spec(demo_spec(opts, entry), run_dir, progress))
    report = build_report(run_dir)
    return DemoResult(
        run_dir=run_dir,
        report=report,
        summary=pd.read_parquet(summary_path),
        model=None if entry is None else entry["name"],
        activity=model_activity(run_dir),
    )
