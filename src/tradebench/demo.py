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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tradebench.benchmarks import build_report, run_spec
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.llm.types import ModelConfig
from tradebench.report.episodes import code_counts, submission_rejections
from tradebench.report.load import load_run, read_episode_tables, read_trace
from tradebench.runs.spec import RunSpec

WINDOW = {"start": "2022-03-01", "end": "2022-03-29"}
LOCAL_SERVER_LOG = "local-model-server.log"
"""The bundled model server's output, in the run folder (named in its errors)."""
BASELINES: list[dict[str, Any]] = [
    {"name": "equal_weight", "baseline": "equal_weight"},
    {"name": "momentum_top20", "baseline": "momentum_topk", "args": {"k": 20}},
    {"name": "cash", "baseline": "cash"},
]


@dataclass(frozen=True)
class DemoOptions:
    """What the demo runs."""

    out: Path
    seed: int = 0
    model: str | None = None
    base_url: str | None = None
    local_model: bool = True
    model_steps: int = 2
    port: int | None = None
    """Port of the bundled model's server (None: a free one)."""


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


def demo_spec(opts: DemoOptions, model_entry: dict[str, Any] | None) -> RunSpec:
    """The demo's run spec: baselines, plus one model agent on a short blinded grid."""
    agents = list(BASELINES) + ([model_entry] if model_entry else [])
    return RunSpec.model_validate(
        {
            "dataset": f"synthetic:cn:{opts.seed}",
            "windows": [WINDOW],
            "modes": ["fixed_candidate", "open_research"],
            "masks": ["blinded"],
            "seeds": [opts.seed],
            "agents": agents,
            # one episode at a time: a local server answers one request at a time, and a
            # queue behind it would spend the requests' timeouts waiting
            "concurrency": 1 if opts.model is None else 2,
            "options": {"max_tool_calls": 3, "max_submit_retries": 2},
        }
    )


@contextlib.contextmanager
def model_entry(opts: DemoOptions) -> Iterator[dict[str, Any] | None]:
    """The model agent entry (starting the bundled local model server if that is used)."""
    if opts.model:
        cfg = ModelConfig.parse(opts.model, base_url=opts.base_url)
        yield {
            "name": cfg.model.replace("/", "_")[:40],
            "provider": cfg.provider,
            "model": cfg.model,
            "base_url": cfg.base_url,
            "max_tokens": 400,
            "max_steps": opts.model_steps,
        }
        return
    if not (opts.local_model and llama_cpp_available()):
        yield None
        return
    opts.out.mkdir(parents=True, exist_ok=True)
    log = opts.out / LOCAL_SERVER_LOG
    with LocalServer(find_bundled_model(), n_ctx=8192, port=opts.port, log_path=log) as server:
        yield {
            "name": "local_tiny_model",
            "provider": "openai",
            "model": server.alias,
            "base_url": server.base_url,
            "max_tokens": 400,
            "max_steps": opts.model_steps,
            "timeout_s": 900,  # a long prompt on two CPU cores takes minutes, not seconds
            "max_attempts": 2,
        }


def run_demo(opts: DemoOptions) -> DemoResult:
    """Run the demo grid into `opts.out` (resumable), then write the HTML report."""
    run_dir = Path(opts.out)
    with model_entry(opts) as entry:
        summary_path = asyncio.run(run_spec(demo_spec(opts, entry), run_dir))
    report = build_report(run_dir)
    return DemoResult(
        run_dir=run_dir,
        report=report,
        summary=pd.read_parquet(summary_path),
        model=None if entry is None else entry["name"],
        activity=model_activity(run_dir),
    )
