"""`probe run` with an LLM attacker stops cleanly at a token budget; a rerun continues and
ends with the same results as an uninterrupted run, each payload asked once overall."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from tests.probe.test_probe_e2e import _responder
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer
from tradebench.probe.store import read_probe_set

runner = CliRunner()


def test_llm_attack_stops_at_the_budget_and_resumes(small_synth_dir: Path, tmp_path: Path):
    probes = tmp_path / "probes.jsonl"
    build = ["probe", "build", "--dataset", str(small_synth_dir), "--out", str(probes)]
    assert runner.invoke(app, [*build, "--n", "6", "--price-modes", "raw"]).exit_code == 0
    probe_set = read_probe_set(probes)

    def attack(out: Path, url: str, *extra: str):
        args = ["probe", "run", str(probes), "--attacker", "openai:scripted", "--base-url", url]
        args += ["--concurrency", "1", "--reply-max-tokens", "64", "-o", str(out), *extra]
        return runner.invoke(app, args)

    with LoopbackServer(responder=_responder(probe_set)) as server:
        assert attack(tmp_path / "clean", server.openai_url).exit_code == 0
        calls = server.count()
        spent = json.loads((tmp_path / "clean" / "budget.json").read_text())
        cap = (spent["input_tokens"] + spent["output_tokens"]) // 2
        stopped = attack(tmp_path / "cut", server.openai_url, "--max-tokens", str(cap))
        assert stopped.exit_code == 1 and "Traceback" not in stopped.output
        assert stopped.output.startswith("error: token budget reached")
        assert "Stopped cleanly" in stopped.output
        first = server.count() - calls
        assert 1 <= first < calls
        assert attack(tmp_path / "cut", server.openai_url).exit_code == 0
        assert server.count() - calls == calls  # nothing asked twice
    name = "results-openai-scripted.parquet"
    clean = pd.read_parquet(tmp_path / "clean" / name)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cut" / name), clean)


def test_attacker_seed_is_a_separate_sample(small_synth_dir: Path, tmp_path: Path) -> None:
    probes = tmp_path / "probes.jsonl"
    build = ["probe", "build", "--dataset", str(small_synth_dir), "--out", str(probes)]
    assert runner.invoke(app, [*build, "--n", "4", "--price-modes", "raw"]).exit_code == 0
    with LoopbackServer(responder=_responder(read_probe_set(probes))) as server:
        for seed in ("0", "2"):
            args = ["probe", "run", str(probes), "--attacker", "openai:scripted"]
            args += ["--base-url", server.openai_url, "--seed", seed, "-o", str(tmp_path / "o")]
            assert runner.invoke(app, args).exit_code == 0
        seeds = [r.body["seed"] for r in server.requests]
    assert seeds.count(0) == seeds.count(2) == len(seeds) // 2 > 0  # no reply reused
    rows = pd.concat(pd.read_parquet(p) for p in sorted((tmp_path / "o").glob("results-*")))
    assert sorted(set(rows["attacker"])) == ["openai:scripted", "openai:scripted@s2"]
