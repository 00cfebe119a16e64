"""`tradebench demo` says what it will do before it starts and counts model calls as they
come: checked against what the loopback server received (the independent count)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.cli.demo import sharpe_text
from tradebench.demo import OPTIONS, DemoOptions, demo_plan, run_demo
from tradebench.llm.loopback import LoopbackServer
from tradebench.runs.progress import RunProgress


def test_the_live_count_of_model_calls_is_what_the_server_received(tmp_path: Path) -> None:
    counters = RunProgress()
    seen: list[int] = []
    counters.listeners.append(lambda p: seen.append(p.model_calls))
    plans = []
    with LoopbackServer() as server:
        opts = DemoOptions(out=tmp_path / "demo", model="openai:m", base_url=server.openai_url)
        run_demo(opts, counters, plans.append)
        received = len(server.requests)
    assert received > 0 and counters.model_calls == received
    assert seen == sorted(seen) and seen[-1] == received  # counted as they came
    assert counters.model_seconds > 0
    (plan,) = plans
    # two modes x two decision days; the bounds follow from the demo's options
    assert plan.decisions == 4
    assert plan.typical_calls <= received <= plan.max_calls
    per_day = (1 + OPTIONS["max_submit_retries"]) + (
        OPTIONS["max_tool_calls"] + 1 + 1 + OPTIONS["max_submit_retries"]
    )
    assert plan.max_calls == 2 * per_day


def test_the_cli_prints_the_plan_first_and_the_results_last(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        args = ["demo", "-o", str(tmp_path / "d"), "--model", "openai:m"]
        result = CliRunner().invoke(app, [*args, "--base-url", server.openai_url])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("demo: 3 baselines") and "model m decides on 4 days" in lines[0]
    assert "report:" in lines[-1] and (tmp_path / "d" / "report.html").exists()


def test_a_short_episode_shows_no_annualised_sharpe() -> None:
    assert sharpe_text(11.22, 2) == "- (2 days)"
    assert sharpe_text(-1.734, 21) == "-1.73"


def test_without_a_model_the_plan_says_why(tmp_path: Path) -> None:
    plan = demo_plan(DemoOptions(out=tmp_path, local_model=False), None)
    assert plan.model is None and plan.no_model_reason == "--no-local-model"
