"""`probe run` shows what it computed: the recovery rates it prints are the ones of the
results file it wrote (recounted here from the file, the Wilson interval by its formula),
its HTTP timeout and attempts are settable, and a dead endpoint is one line at once."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.probe.test_probe_e2e import _responder
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.probe.store import read_probe_set

runner = CliRunner()
HITS = {
    "top1": "top1",
    "top5": "top5",
    "date ±7d": "date_ok",
    "joint": "joint",
    "sector": "sector_ok",
    "board": "board_ok",
}


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@pytest.fixture(scope="module")
def probes(small_synth_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli-probes") / "probes.jsonl"
    build = ["probe", "build", "--dataset", str(small_synth_dir), "--out", str(out)]
    assert runner.invoke(app, [*build, "--n", "6", "--price-modes", "raw"]).exit_code == 0
    return out


def _attack(probes: Path, url: str, out: Path, *extra: str):
    args = ["probe", "run", str(probes), "--attacker", "openai:scripted", "--base-url", url]
    return runner.invoke(app, [*args, "-o", str(out), *extra])


def test_printed_rates_are_the_files(probes: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=_responder(read_probe_set(probes))) as server:
        result = _attack(probes, server.openai_url, tmp_path / "o")
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(tmp_path / "o" / "results-openai-scripted.parquet")
    valid = rows[rows["valid"].astype(bool)]
    printed = re.findall(
        r"│ blinded\s+│ raw\s+│ (\S+(?: ±7d)?)\s+│ (\d+) / (\d+)\s+│ ([\d.]+)%\s+│ "
        r"\[([\d.]+)%, ([\d.]+)%\]",
        result.output,
    )
    assert [p[0] for p in printed] == list(HITS)
    for metric, k, n, rate, low, high in printed:
        scored = valid[valid[HITS[metric]].notna()]
        hits = int(scored[HITS[metric]].astype(bool).sum())
        assert (int(k), int(n)) == (hits, len(scored))
        lo, hi = _wilson(hits, len(scored))
        assert rate == f"{100 * hits / len(scored):.1f}"
        assert (low, high) == (f"{100 * lo:.1f}", f"{100 * hi:.1f}")
    assert 0 < len(valid) < len(rows)  # the script has a failure, excluded from the rates


def test_a_dead_endpoint_is_one_line_at_once(probes: Path, tmp_path: Path) -> None:
    result = _attack(probes, "http://127.0.0.1:9/v1", tmp_path / "dead")
    # refused by the check before any request, not after the retries
    assert result.exit_code == 1 and "gave up" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: endpoint http://127.0.0.1:9/v1")
    assert "connection refused" in lines[0]


def test_timeout_and_attempts_are_the_users(probes: Path, tmp_path: Path) -> None:
    def slow(request: RecordedRequest) -> Reply:
        return Reply.say("late", delay_s=3.0)

    with LoopbackServer(responder=slow) as server:
        extra = ("--timeout-s", "0.3", "--max-attempts", "2", "--concurrency", "1")
        result = _attack(probes, server.openai_url, tmp_path / "slow", *extra, "--limit", "1")
        calls = server.count()
    assert result.exit_code == 1 and "gave up after 2 attempts" in result.output
    # each attempt ended at the 0.3 s timeout (the server answers after 3 s), not at 120 s
    assert calls == 2 and "last fault timeout" in result.output
