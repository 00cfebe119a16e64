"""A keyed custom endpoint from `llm ping`, `demo` and `run`: with `--api-key-env` the key
goes out as a bearer token (the loopback server's record of the header is the oracle),
without it no key goes out, the key is in no file written, and a run replays from its
cache with the variable unset. `mcq eval`, `mcq mine` and `probe run` are tested beside
their own fixtures (tests/benchmarks/mcq, tests/probe)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import spec_dict
from tests.llm.keyed import KEY, VARIABLE, bearer_heard, files_holding_key
from tradebench.cli import app
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer

runner = CliRunner()


def test_ping_sends_the_key_only_when_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, KEY)
    with LoopbackServer() as server:
        url = ["--base-url", server.openai_url]
        assert runner.invoke(app, ["llm", "ping", "openai:m", *url]).exit_code == 0
        unnamed = bearer_heard(server)
        keyed = ["llm", "ping", "openai:m", *url, "--api-key-env", VARIABLE]
        result = runner.invoke(app, keyed)
        assert result.exit_code == 0, result.output
        assert bearer_heard(server) - unnamed == {f"Bearer {KEY}"}
    assert unnamed == {"Bearer no-key"}
    assert KEY not in result.output


def test_ping_through_a_preset_and_an_unknown_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    with LoopbackServer(quirks=["choice_rejected", "reasoning"]) as server:
        args = ["llm", "ping", "openai:deepseek-reasoner", "--endpoint", "deepseek"]
        result = runner.invoke(app, [*args, "--base-url", server.openai_url])
        assert result.exit_code == 0, result.output
        assert bearer_heard(server) == {f"Bearer {KEY}"}
        assert "forced as: auto" in result.output
        assert all(r.reply != "error" for r in server.requests)  # no refused form sent
    bad = runner.invoke(app, ["llm", "ping", "openai:m", "--endpoint", "nope"])
    assert bad.exit_code == 1 and "unknown endpoint 'nope'; known:" in bad.output


def test_demo_sends_the_key_and_writes_it_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, KEY)
    with LoopbackServer() as server:
        args = ["demo", "-o", str(tmp_path / "d"), "--model", "openai:m"]
        args += ["--base-url", server.openai_url, "--api-key-env", VARIABLE]
        result = runner.invoke(app, args)
        heard = bearer_heard(server)
    assert result.exit_code == 0, result.output
    assert heard == {f"Bearer {KEY}"}
    assert (tmp_path / "d" / "report.html").exists()
    assert files_holding_key(tmp_path / "d") == []


def test_run_overrides_send_the_key_write_it_nowhere_and_replay_without_it(
    synth_dataset_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, KEY)
    with LoopbackServer() as server:
        spec = spec_dict(synth_dataset_dir, "http://127.0.0.1:9/v1", ["blinded"], ["memory_only"])
        spec["windows"] = [{"start": "2024-02-01", "end": "2024-02-05"}]
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec))
        args = ["run", str(path), "-o", str(tmp_path / "run"), "--base-url", server.openai_url]
        args += ["--api-key-env", VARIABLE, "--endpoint", "vllm", "--rpm", "1000"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        heard = bearer_heard(server)
        calls = server.count()
    assert calls > 0 and heard == {f"Bearer {KEY}"}
    written = yaml.safe_load((tmp_path / "run" / "spec.yaml").read_text())
    agent = next(a for a in written["agents"] if a["name"] == "scripted")
    model = agent["model"]  # the endpoint is the model block's; the limits the entry's
    assert model["api_key_env"] == VARIABLE and model["endpoint"] == "vllm"
    assert agent["limits"] == {"rpm": 1000, "tpm": None}
    assert model["base_url"] == server.openai_url
    assert next(a for a in written["agents"] if a["name"] == "ew").get("limits") is None
    assert runner.invoke(app, ["report", str(tmp_path / "run")]).exit_code == 0
    assert files_holding_key(tmp_path / "run") == []
    rows = ResponseCache(tmp_path / "run" / "cache.sqlite", mode="replay").rows()
    assert rows and not [r.key for r in rows if KEY in r.request + r.response]  # deflated
    # replay: the variable unset, the endpoint gone, the spec in replay mode
    monkeypatch.delenv(VARIABLE)
    spec["cache"] = {"path": str(tmp_path / "run" / "cache.sqlite"), "mode": "replay"}
    path.write_text(yaml.safe_dump(spec))
    args = ["run", str(path), "-o", str(tmp_path / "replay"), "--api-key-env", VARIABLE]
    replayed = runner.invoke(app, [*args, "--base-url", server.openai_url])
    assert replayed.exit_code == 0, replayed.output
    assert server.count() == calls  # nothing was sent
