"""`tradebench mcq eval --mode no_tools` through the CLI against a real loopback server.

Five real questions, two runs. The scripted model answers right, wrong, unparseably and
with a tool call (refused); the summary is checked against hand-computed accuracy, std
across runs and Wilson intervals, and a rerun is served from the cache alone.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.eval.run import EvalSpec, run_eval
from tradebench.benchmarks.mcq.prompt_files import load_prompt
from tradebench.benchmarks.mcq.records import MCQRecord, write_jsonl
from tradebench.cli.mcq import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.llm.types import ModelConfig

runner = CliRunner()


def pick(pool: BuildResult, tiers: Sequence[str]) -> list[MCQRecord]:
    """The first question of each listed tier, in order (a tier may repeat)."""
    taken: list[MCQRecord] = []
    for tier in tiers:
        taken.append(next(r for r in pool.records if r.tier == tier and r not in taken))
    return taken


def question_of(request: RecordedRequest, records: Sequence[MCQRecord]) -> MCQRecord:
    """The question a recorded request asks (found in its first user message)."""
    user = next(m for m in request.body["messages"] if m["role"] == "user")
    return next(r for r in records if r.question in user["content"])


def wrong(record: MCQRecord) -> str:
    """A letter that is not the key."""
    return next(letter for letter in "ABCD" if letter != record.answer)


def scripted(records: Sequence[MCQRecord], plans: list[list[Reply]]):
    """Responder: the n-th request about question i gets `plans[i][n]`."""
    seen: Counter[str] = Counter()

    def respond(request: RecordedRequest) -> Reply:
        record = question_of(request, records)
        n = seen[record.id]
        seen[record.id] += 1
        return plans[records.index(record)][n]

    return respond


@pytest.fixture
def questions(base_pool: BuildResult, tmp_path: Path) -> tuple[Path, list[MCQRecord]]:
    records = pick(base_pool, ["easy", "easy", "medium", "medium", "hard"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    return path, records


def _plans(records: list[MCQRecord]) -> list[list[Reply]]:
    e1, e2, m1, m2, h1 = records
    return [  # [run 0, run 1] per question
        [Reply.say(f"Counting bars.\nAnswer: {e1.answer}"), Reply.say(f"Answer: {e1.answer}")],
        [Reply.say(f"Answer: {wrong(e2)}"), Reply.say(e2.answer)],
        [Reply.say("I believe it is about 12."), Reply.say(f"**Answer:** {m1.answer}")],
        [Reply.tool("run_python", {"code": "print(1)"}), Reply.say(f"Answer: {wrong(m2)}")],
        [Reply.say(f"Final answer: {h1.answer}"), Reply.say(f"Answer: {h1.answer}\nHope so.")],
    ]


def _invoke(path: Path, out: Path, url: str, *extra: str) -> str:
    args = ["eval", str(path), "--model", "openai:scripted", "--base-url", url]
    args += ["--mode", "no_tools", "--runs", "2", "--concurrency", "3", "-o", str(out), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_no_tools_eval_scores_parses_and_aggregates(questions, tmp_path, caplog):
    path, records = questions
    out = tmp_path / "eval"
    caplog.set_level(logging.WARNING, logger="tradebench.mcq")
    with LoopbackServer(responder=scripted(records, _plans(records))) as server:
        printed = _invoke(path, out, server.openai_url)
        assert server.count() == 10
        for request in server.requests:  # no tools offered, ever
            assert "tools" not in request.body and "tool_choice" not in request.body
            system = request.body["messages"][0]
            assert system["role"] == "system"
            assert system["content"] == load_prompt("solver_no_tools")  # a single letter only
            assert request.body["temperature"] == 0.7  # two runs, no --temperature: sampled
        header = next(line for line in printed.splitlines() if "accuracy" in line)
        assert "constant" in header and "random" in header
        assert "excluded 1 (no-tools tool calls, scored wrong above)" in printed
        assert "accuracy without them 0.550" in printed
        assert "at temperature 0.7: runs are independent samples" in " ".join(printed.split())

        rows = pd.read_parquet(out / "results.parquet")
        assert list(rows["run"]) == [0] * 5 + [1] * 5
        assert list(rows["question_id"]) == [r.id for r in records] * 2
        assert list(rows["correct"]) == [True, False, False, False, True] + [True] * 3 + [False] * 2
        assert list(rows["parsed"]) == [True, True, False, False, True] + [True] * 4 + [False]
        refused = rows[rows["refused_tool_call"]]
        assert list(refused["question_id"]) == [records[3].id] and refused["letter"].isna().all()
        assert "run_python" in refused["raw_reply"].iloc[0]
        assert (rows["input_tokens"] > 0).all() and (rows["model_calls"] == 1).all()
        messages = [r.getMessage() for r in caplog.records]
        assert sum("unparseable reply" in m for m in messages) == 2
        assert sum("refused tool call" in m for m in messages) == 1

        summary = json.loads((out / "summary.json").read_text())
        (s,) = summary["models"]
        assert (s["model"], s["mode"], s["runs"]) == ("openai:scripted", "no_tools", 2)
        assert (s["unparseable"], s["refused_tool_calls"]) == (2, 1)
        assert s["temperature"] == 0.7 and "temperature 0.7" in summary["sampling"]
        # the tool call is wrong in `overall` and excluded here: run 0 2/4, run 1 3/5
        assert s["excluded_attempts"] == 1
        kept = s["overall_without_excluded"]
        assert (kept["attempts"], kept["correct"]) == (9, 5)
        assert kept["per_run"] == pytest.approx([0.5, 0.6])
        keys = Counter(r.answer for r in records)
        best = max("ABCD", key=lambda k: (keys[k], -ord(k)))
        assert s["random_baseline"] == 0.25
        assert s["overall"]["constant_letter"] == best
        assert s["overall"]["constant_letter_accuracy"] == pytest.approx(keys[best] / 5)
        assert s["tiers"]["hard"]["constant_letter_accuracy"] == 1.0  # one hard question
        overall = s["overall"]
        # run 0: 2/5 correct, run 1: 3/5; std = |0.4 - 0.6| / sqrt(2)
        assert overall["per_run"] == pytest.approx([0.4, 0.6])
        assert (overall["attempts"], overall["correct"]) == (10, 5)
        assert overall["mean"] == pytest.approx(0.5)
        assert overall["std"] == pytest.approx(0.141421, abs=1e-6)
        # Wilson, p = 0.5, n = 10, z = 1.959964: 0.5 -/+ 1.416 * sqrt(0.025 + 0.009604)
        assert overall["wilson_low"] == pytest.approx(0.2366, abs=1e-4)
        assert overall["wilson_high"] == pytest.approx(0.7634, abs=1e-4)
        tiers = s["tiers"]
        assert tiers["easy"]["per_run"] == pytest.approx([0.5, 1.0])
        assert tiers["easy"]["std"] == pytest.approx(0.353553, abs=1e-6)
        assert (tiers["easy"]["wilson_low"], tiers["easy"]["wilson_high"]) == pytest.approx(
            (0.3006, 0.9544), abs=1e-4
        )
        assert tiers["medium"]["per_run"] == pytest.approx([0.0, 0.5])
        assert (tiers["medium"]["wilson_low"], tiers["medium"]["wilson_high"]) == pytest.approx(
            (0.0456, 0.6994), abs=1e-4
        )
        assert tiers["hard"]["per_run"] == pytest.approx([1.0, 0.0])
        assert tiers["hard"]["std"] == pytest.approx(0.707107, abs=1e-6)
        report = (out / "report.html").read_text()
        assert "MCQ evaluation" in report and "0.500 ± 0.141" in report
        assert "all w/o excluded" in report and "0.550 ± 0.071" in report
        assert f"{keys[best] / 5:.3f} ({best})" in report and "<th>random</th>" in report

        before = (out / "results.parquet").read_bytes(), (out / "summary.json").read_text()
        _invoke(path, out, server.openai_url)  # the rerun is served by the cache
        assert server.count() == 10
        after = (out / "results.parquet").read_bytes(), (out / "summary.json").read_text()
        assert after == before


def test_two_models_single_run_and_the_report_verb(questions, tmp_path):
    path, _ = questions
    with LoopbackServer(responder=lambda req: Reply.say("Answer: A")) as server:
        args = ["eval", str(path), "--model", "openai:m", "--model", "openai:n"]
        args += ["--base-url", server.openai_url, "--limit", "2", "--no-report"]
        result = runner.invoke(app, [*args, "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    solver = {"name": "no_tools", "args": {"prompt": "letter"}}
    assert summary["questions"] == 2 and summary["solver"] == solver
    assert summary["sampling"] == "1 run per question at temperature 0."
    assert {m["temperature"] for m in summary["models"]} == {0.0}
    assert [m["model"] for m in summary["models"]] == ["openai:m", "openai:n"]
    assert summary["models"][0]["overall"]["std"] is None  # one run: no spread to report
    assert not (tmp_path / "report.html").exists()
    rows = pd.read_parquet(tmp_path / "results.parquet")
    assert list(rows["model"]) == ["openai:m"] * 2 + ["openai:n"] * 2

    html = tmp_path / "page" / "mcq.html"
    made = runner.invoke(app, ["report", str(tmp_path / "results.parquet"), "-o", str(html)])
    assert made.exit_code == 0, made.output
    page = html.read_text()
    assert "openai:n" in page and "Accuracy per template" in page and "<script src" not in page


def test_reasoning_variant_and_an_explicit_temperature(questions, tmp_path):
    path, _ = questions
    with LoopbackServer(responder=lambda req: Reply.say("Thinking.\nAnswer: B")) as server:
        extra = ("--no-tools-prompt", "reasoning", "--temperature", "0")
        printed = _invoke(path, tmp_path / "out", server.openai_url, *extra)
    for request in server.requests:
        assert request.body["messages"][0]["content"] == load_prompt("solver_no_tools_reasoning")
        assert request.body["temperature"] == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["solver"] == {"name": "no_tools", "args": {"prompt": "reasoning"}}
    assert "not a sampling spread" in summary["sampling"] and "temperature 0" in printed
    rows = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert rows["parsed"].all() and set(rows["letter"]) == {"B"}


def test_library_default_asks_for_a_single_letter(questions, tmp_path):
    path, _ = questions
    with LoopbackServer(responder=lambda req: Reply.say("C")) as server:
        config = ModelConfig(provider="openai", model="m", base_url=server.openai_url)
        outcome = run_eval(path, EvalSpec(models=(config,)), tmp_path, report=False, limit=1)
    (request,) = server.requests
    assert request.body["messages"][0]["content"] == load_prompt("solver_no_tools")
    assert outcome.summary.solver == {"name": "no_tools", "args": {"prompt": "letter"}}


def test_endpoint_failure_is_a_clean_error(questions, tmp_path):
    path, _ = questions
    with LoopbackServer(responder=lambda req: Reply.error(400, body="bad model")) as server:
        args = ["eval", str(path), "--model", "openai:m", "--base-url", server.openai_url]
        result = runner.invoke(app, [*args, "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert "error:" in result.output and "Traceback" not in result.output


def test_bad_mode_is_a_clean_error(questions, tmp_path):
    path, _ = questions
    args = ["eval", str(path), "--model", "openai:m", "--mode", "tools", "-o", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert "no_tools, with_tools or agent" in result.output
