"""A portfolio grid runs to completion against every endpoint personality of the loopback
server, and what each personality costs is counted in the summary.

The oracle is the personality's documented behaviour, not the adapter: how many forms of
`tool_choice` an endpoint refuses or ignores before one works (the ladder of
`test_tool_choice_ladder.CASES`; the working form is kept for the rest of the run, so the
steps down happen once per model), and for a rate-limited endpoint the 429s the server
sent, each retried.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict
from tests.llm.test_tool_choice_ladder import CASES
from tradebench.benchmarks import run_spec
from tradebench.llm.loopback import LoopbackServer, RateLimit
from tradebench.runs.spec import RunSpec

MODES = ["memory_only", "open_research"]


def _run(server: LoopbackServer, dataset: Path, folder: Path) -> pd.DataFrame:
    spec = spec_dict(dataset, server.openai_url, ["blinded"], MODES)
    spec["agents"] = spec["agents"][:1]
    spec["windows"] = [{"start": "2024-02-01", "end": "2024-02-06"}]
    spec["concurrency"] = 1
    spec["agents"][0]["max_attempts"] = 8
    summary = pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), folder)))
    llm = summary[summary["kind"] == "llm"]
    assert len(llm) == len(MODES) and (llm["status"] == "done").all()
    assert (llm["fallback_steps"] == 0).all()  # every step's submission was accepted
    return llm


@pytest.mark.parametrize("personality", sorted(CASES))
def test_a_grid_completes_and_counts_its_steps_down(
    personality: str, synth_dataset_dir: Path, tmp_path: Path
) -> None:
    _, seen = CASES[personality]
    quirks = [] if personality == "none" else [personality]
    with LoopbackServer(quirks=quirks) as server:  # type: ignore[arg-type]
        llm = _run(server, synth_dataset_dir, tmp_path)
    assert int(llm["tool_choice_fallbacks"].sum()) == len(seen) - 2


@pytest.mark.parametrize("retry_after", [True, False], ids=["retry-after", "no-retry-after"])
def test_a_grid_completes_under_a_rate_limit_and_counts_its_429s(
    retry_after: bool, synth_dataset_dir: Path, tmp_path: Path
) -> None:
    limit = RateLimit(requests=3, window_s=1.0, retry_after=retry_after)
    with LoopbackServer(rate_limit=limit) as server:
        llm = _run(server, synth_dataset_dir, tmp_path)
        refused = server.limited
    assert refused > 0
    assert int(llm["faults_429"].sum()) == refused
