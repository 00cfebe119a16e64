"""`mcq eval` and `mcq mine` reach a keyed custom endpoint: with `--api-key-env` every
request carries the key as a bearer token (the loopback server's record is the oracle),
no file written holds it (the cache's deflated rows are decoded and scanned too), and a
rerun in replay mode works with the variable unset and sends nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick
from tests.benchmarks.mcq.test_mcq_mine import GENERATED, keys, make_responder
from tests.llm.keyed import KEY, VARIABLE, bearer_heard, files_holding_key
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.cli.mcq import app
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, Reply

runner = CliRunner()
__all__ = ["keys"]  # the fixture, shared with the mining tests


def _cache_holds_key(path: Path) -> bool:
    rows = ResponseCache(path, mode="replay").rows()
    return any(KEY in r.request + r.response for r in rows)


def test_eval_sends_the_key_writes_it_nowhere_and_replays_without_it(
    base_pool: BuildResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, KEY)
    path = tmp_path / "q.jsonl"
    write_jsonl(pick(base_pool, ["easy", "medium"]), path)
    out = tmp_path / "eval"

    def invoke(url: str, *extra: str):
        args = ["eval", str(path), "--model", "openai:m", "--base-url", url, "-o", str(out)]
        return runner.invoke(app, [*args, "--api-key-env", VARIABLE, "--rpm", "600", *extra])

    with LoopbackServer(responder=lambda request: Reply.say("Answer: B")) as server:
        result = invoke(server.openai_url)
        assert result.exit_code == 0, result.output
        calls = server.count()
        assert calls == 2 and bearer_heard(server) == {f"Bearer {KEY}"}
        assert files_holding_key(out) == [] and not _cache_holds_key(out / "cache.sqlite")
        monkeypatch.delenv(VARIABLE)
        replayed = invoke(server.openai_url, "--cache-mode", "replay")
        assert replayed.exit_code == 0, replayed.output
        assert server.count() == calls


def test_mine_sends_the_key_and_writes_it_nowhere(
    aapl, keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, _ = aapl
    monkeypatch.setenv(VARIABLE, KEY)
    db = tmp_path / "db"
    with LoopbackServer(responder=make_responder(GENERATED[:1], keys)) as server:
        args = ["mine", "--generator", "openai:gen", "--solver", "openai:solver"]
        args += ["--base-url", server.openai_url, "--api-key-env", VARIABLE, "--rpm", "600"]
        args += ["--rounds", "1", "--concurrency", "1", "--code-timeout", "20"]
        args += ["--bars", ref.path, "--symbol", "AAPL", "--start", "2020-01-01"]
        args += ["--end", "2024-01-01", "-o", str(db)]
        result = runner.invoke(app, args)
        heard = bearer_heard(server)
    assert result.exit_code == 0, result.output
    assert heard == {f"Bearer {KEY}"}
    assert files_holding_key(db) == [] and not _cache_holds_key(db / "cache.sqlite")
