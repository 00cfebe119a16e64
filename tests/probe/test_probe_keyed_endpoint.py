"""`probe run` with an LLM attacker reaches a keyed custom endpoint: with `--api-key-env`
the key goes out as a bearer token (the loopback server's record is the oracle), it is in
no file written, and a replay works with the variable unset and sends nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.llm.keyed import KEY, VARIABLE, bearer_heard, files_holding_key
from tests.probe.test_probe_e2e import _responder
from tradebench.cli import app
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer
from tradebench.probe.store import read_probe_set

runner = CliRunner()


def test_attack_sends_the_key_writes_it_nowhere_and_replays_without_it(
    small_synth_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, KEY)
    probes = tmp_path / "probes.jsonl"
    build = ["probe", "build", "--dataset", str(small_synth_dir), "--out", str(probes)]
    assert runner.invoke(app, [*build, "--n", "3", "--price-modes", "raw"]).exit_code == 0
    out = tmp_path / "out"

    def attack(url: str, *extra: str):
        args = ["probe", "run", str(probes), "--attacker", "openai:scripted", "--base-url", url]
        args += ["--api-key-env", VARIABLE, "--rpm", "600", "-o", str(out), *extra]
        return runner.invoke(app, args)

    with LoopbackServer(responder=_responder(read_probe_set(probes))) as server:
        result = attack(server.openai_url)
        assert result.exit_code == 0, result.output
        calls = server.count()
        assert calls > 0 and bearer_heard(server) == {f"Bearer {KEY}"}
        assert files_holding_key(out) == []
        rows = ResponseCache(out / "cache.sqlite", mode="replay").rows()
        assert rows and not [r for r in rows if KEY in r.request + r.response]
        monkeypatch.delenv(VARIABLE)
        replayed = attack(server.openai_url, "--cache-mode", "replay")
        assert replayed.exit_code == 0, replayed.output
        assert server.count() == calls
