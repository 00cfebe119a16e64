"""`tradebench plan SPEC` states each model agent's requests, tokens, cost and wall time
before the run: from the stated assumptions, and from a previous run's measured traces.

Oracles: the grid arithmetic written out here (episodes x weekdays x requests a step) and,
for `--from`, the previous run's traces counted here, independently of `plan.cost`.
"""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import spec_dict
from tradebench.benchmarks import run_spec
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines

runner = CliRunner(env={"COLUMNS": "200"})


def _spec(dataset: Path, url: str) -> dict:
    spec = spec_dict(dataset, url, ["blinded"], ["memory_only"], seeds=[0, 1])
    spec["windows"] = [{"start": "2024-03-04", "end": "2024-03-08"}]  # 5 weekdays
    spec["agents"] = [
        {"name": "priced", "provider": "openai", "model": "house-model", "base_url": url,
         "max_tokens": 256, "limits": {"rpm": 30}},
        {"name": "unpriced", "provider": "openai", "model": "no-such-model-7", "base_url": url,
         "max_tokens": 1000},
        {"name": "ew", "baseline": "equal_weight"},
    ]  # fmt: skip
    spec["budget"] = {"prices": {"openai:house-model": {"input_per_mtok": 1.0,
                                                        "output_per_mtok": 2.0}}}  # fmt: skip
    return spec


def _value(output: str, quantity: str) -> str:
    line = next(x for x in output.splitlines() if quantity in x)
    return re.split(r"\s{2,}|│", line.split(quantity, 1)[1].strip(" │"))[0].strip()


def test_the_plan_prices_the_assumed_load_and_says_an_unknown_price(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec(tmp_path, "http://127.0.0.1:9/v1")))
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 0, result.output
    out = result.output
    # 2 seeds x 1 mode x 1 mask x 1 window = 2 episodes of 5 steps; 2 requests a step
    assert _value(out, "priced: requests") == "20"
    assert _value(out, "priced: input tokens") == f"{20 * 4000:,}"
    assert _value(out, "priced: output tokens") == f"{20 * 256:,}"  # capped at max_tokens
    assert _value(out, "priced: cost") == f"${(20 * 4000 * 1.0 + 20 * 256 * 2.0) / 1e6:,.2f}"
    assert _value(out, "priced: wall time") == "at least 40 s (30 rpm)"  # 20 / 30 per min
    assert _value(out, "unpriced: output tokens") == f"{20 * 400:,}"
    assert _value(out, "unpriced: cost").startswith("unknown")
    assert "$0.00" not in out


def test_the_plan_reads_the_load_a_previous_run_measured(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer() as server:
        spec = spec_dict(synth_dataset_dir, server.openai_url, ["blinded"], ["memory_only"])
        spec["agents"] = spec["agents"][:1]
        spec["windows"] = [{"start": "2024-02-01", "end": "2024-02-07"}]
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
    folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
    lines = trace_lines(folder)
    calls = [c for line in lines for c in line["model_calls"]]
    per_step = len(calls) / len(lines)
    input_per_step = sum(c["usage"]["input_tokens"] for c in calls) / len(lines)
    planned = _spec(tmp_path, server.openai_url)
    planned["agents"][0]["name"] = "scripted"  # the previous run's agent
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(planned))
    result = runner.invoke(app, ["plan", str(path), "--from", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert _value(result.output, "scripted: requests") == f"{math.ceil(per_step * 10):,}"
    assert _value(result.output, "scripted: input tokens") == f"{round(input_per_step * 10):,}"
    assert "per step as measured in" in result.output
