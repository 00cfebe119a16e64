"""`mcq eval` and `mcq mine` stop cleanly at a token budget and a rerun continues: every
request is sent once over both invocations, and the files equal an uninterrupted run's."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick
from tests.benchmarks.mcq.test_mcq_mine import GENERATED, keys, make_responder
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.cli.mcq import app
from tradebench.llm.loopback import LoopbackServer, Reply

runner = CliRunner()
__all__ = ["keys"]  # the fixture, shared with the mining tests


def _spent(folder: Path) -> dict:
    return json.loads((folder / "budget.json").read_text())


def _stopped(result) -> None:
    """A budget stop: exit 1, one `error:` line saying how to continue, no traceback."""
    assert result.exit_code == 1, result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: token budget reached"), lines
    assert "Stopped cleanly" in lines[0] and "rerun the same command" in lines[0]


def test_eval_stops_at_the_budget_and_resumes(base_pool: BuildResult, tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    write_jsonl(pick(base_pool, ["easy", "easy", "medium", "medium", "hard"]), path)

    def invoke(out: Path, url: str, *extra: str):
        args = ["eval", str(path), "--model", "openai:m", "--base-url", url, "--no-report"]
        return runner.invoke(app, [*args, "--concurrency", "1", "--reply-max-tokens", "32",
                                   "-o", str(out), *extra])  # fmt: skip

    with LoopbackServer(responder=lambda request: Reply.say("Answer: B")) as server:
        assert invoke(tmp_path / "clean", server.openai_url).exit_code == 0
        total = _spent(tmp_path / "clean")
        assert total["calls"] == server.count() == 5
        cap = (total["input_tokens"] + total["output_tokens"]) // 2
        _stopped(invoke(tmp_path / "cut", server.openai_url, "--max-tokens", str(cap)))
        first = server.count() - 5
        spent = _spent(tmp_path / "cut")
        assert 1 <= first < 5 and spent["calls"] == first
        assert spent["input_tokens"] + spent["output_tokens"] <= cap
        assert not (tmp_path / "cut" / "results.parquet").exists()
        assert invoke(tmp_path / "cut", server.openai_url).exit_code == 0
        assert server.count() - 5 == 5  # each question asked once over both invocations
    clean = pd.read_parquet(tmp_path / "clean" / "results.parquet").drop(columns="latency_s")
    resumed = pd.read_parquet(tmp_path / "cut" / "results.parquet").drop(columns="latency_s")
    pd.testing.assert_frame_equal(resumed, clean)
    assert _spent(tmp_path / "cut")["calls"] == 5


def _mine(db: Path, url: str, ref, rounds: int, *extra: str):
    args = ["mine", "--generator", "openai:gen", "--solver", "openai:solver", "--base-url", url]
    args += ["--rounds", str(rounds), "--concurrency", "1", "--code-timeout", "20"]
    args += ["--bars", ref.path, "--symbol", "AAPL", "--start", "2020-01-01"]
    args += ["--end", "2024-01-01", "--reply-max-tokens", "64", "-o", str(db), *extra]
    return runner.invoke(app, args)


def test_mining_stops_at_the_budget_and_finishes_the_run(aapl, keys, tmp_path: Path) -> None:
    ref, _ = aapl
    with LoopbackServer(responder=make_responder(GENERATED[:2], keys)) as server:
        assert _mine(tmp_path / "clean", server.openai_url, ref, 2).exit_code == 0
        clean_calls = server.count()
    with LoopbackServer(responder=make_responder(GENERATED[:1], keys)) as server:
        assert _mine(tmp_path / "one", server.openai_url, ref, 1).exit_code == 0
    round_one = _spent(tmp_path / "one")
    cap = round_one["input_tokens"] + round_one["output_tokens"] + 1
    db = tmp_path / "cut"
    with LoopbackServer(responder=make_responder(GENERATED[:2], keys)) as server:
        _stopped(_mine(db, server.openai_url, ref, 2, "--max-tokens", str(cap)))
        assert not (db / "db" / "summary" / "summary.jsonl").exists()
        attempts = (db / "db" / "attempts" / "attempts.jsonl").read_text().splitlines()
        assert [json.loads(a)["round"] for a in attempts] == [1]
        assert _mine(db, server.openai_url, ref, 2).exit_code == 0
        assert server.count() == clean_calls  # round 1 was not asked again
    for name in ("attempts/attempts.jsonl", "summary/summary.jsonl", "mcq/accepted.jsonl"):
        clean = (tmp_path / "clean" / "db" / name).read_text()
        assert (db / "db" / name).read_text() == clean, name
    assert len(list((db / "runs").iterdir())) == 1  # the run's logs stay in one folder
