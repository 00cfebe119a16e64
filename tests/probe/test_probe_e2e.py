"""End to end through the CLI: build -> LLM attacker on the loopback server -> results -> report.

The scripted attacker knows the gold answers and replies, per probe, with a hit, a near
miss, a miss, garbage, or an invalid first submission, so every rate is known exactly.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.probe.llm_attacker import SUBMIT_NAME, attack_prompt
from tradebench.probe.store import ProbeSet, read_probe_set

runner = CliRunner()
N = 8


def _answers(probe_set: ProbeSet) -> dict[str, tuple[int, dict[str, Any]]]:
    """User prompt -> (probe index, the correct answer)."""
    out = {}
    for i, probe in enumerate(probe_set.probes):
        gold = probe.gold
        answer = {
            "tickers": [gold.symbol],
            "date": gold.date.isoformat(),
            "sector": gold.sector,
            "board": gold.board,
        }
        for variant in probe.variants:
            out[attack_prompt(probe_set.header, variant)[1]] = (i, answer)
    return out


def _responder(probe_set: ProbeSet):
    answers = _answers(probe_set)
    calendar = probe_set.header.calendar

    def respond(request: RecordedRequest) -> Reply:
        messages = (request.body or {})["messages"]
        assert request.forced_tool() == SUBMIT_NAME
        i, right = answers[messages[1]["content"]]
        pos = probe_set.probes[i].gold.date_pos
        tried = any(m["role"] == "tool" for m in messages)
        if i == 3:  # top-5 hit in third place, date exactly 7 trading days early
            wrong = ["SZ000001", "SZ000002", right["tickers"][0]]
            return Reply.tool(
                SUBMIT_NAME, {**right, "tickers": wrong, "date": str(calendar[pos - 7])}
            )
        if i == 4:  # wrong stock, date 8 trading days early, wrong sector
            return Reply.tool(
                SUBMIT_NAME,
                {**right, "tickers": ["SZ000001"], "date": str(calendar[pos - 8]), "sector": "x"},
            )
        if i == 5:
            return Reply.garbage()
        if i == 6 and not tried:
            return Reply.tool(SUBMIT_NAME, {**right, "date": "2024-13-45"})
        if i == 7:  # exchange-suffixed form of the right ticker
            code = right["tickers"][0]
            return Reply.tool(SUBMIT_NAME, {**right, "tickers": [f"{code[2:]}.{code[:2]}"]})
        return Reply.tool(SUBMIT_NAME, right)

    return respond


def _ok(result) -> None:
    assert result.exit_code == 0, result.output


def test_build_run_report_end_to_end(small_synth_dir: Path, tmp_path: Path):
    probes = tmp_path / "probes.jsonl"
    out = tmp_path / "results"
    _ok(
        runner.invoke(
            app,
            [
                "probe",
                "build",
                "--dataset",
                str(small_synth_dir),
                "--out",
                str(probes),
                "--n",
                str(N),
                "--price-modes",
                "raw",
            ],
        )
    )
    probe_set = read_probe_set(probes)
    assert len(probe_set.probes) == N

    with LoopbackServer(responder=_responder(probe_set)) as server:
        args = [
            "probe",
            "run",
            str(probes),
            "--attacker",
            "openai:scripted",
            "--base-url",
            server.openai_url,
            "-o",
            str(out),
            "--concurrency",
            "3",
            "--reply-max-tokens",
            "64",
        ]
        result = runner.invoke(app, args)
        _ok(result)
        assert "8 attempts, 7 valid, 1 failed" in result.output
        sent = server.count()
    assert sent == 7 + 3 + 1  # one call each, three garbage replies, one retry

    rows = pd.read_parquet(out / "results-openai-scripted.parquet").set_index("probe_id")
    assert rows["valid"].tolist() == [True] * 5 + [False] + [True] * 2
    assert rows.loc["p0006", "failure"] == "no_valid_reply"
    assert rows.loc["p0006", "unreadable"] == 3
    assert (rows.loc["p0007", "rejected"], rows.loc["p0007", "retries"]) == (1, 1)
    assert rows.loc["p0004", "date_distance"] == 7 and rows.loc["p0005", "date_distance"] == 8

    summary = pd.read_parquet(out / "summary.parquet").set_index("metric")
    got = {m: (int(r["successes"]), int(r["n"])) for m, r in summary.iterrows()}
    assert got == {
        "top1": (5, 7),
        "top5": (6, 7),
        "date ±7d": (6, 7),
        "joint": (6, 7),
        "sector": (6, 7),
        "board": (7, 7),
    }
    assert set(summary["n_failed"]) == {1}

    # the cache replays the whole run with the server gone
    replay = [
        "probe",
        "run",
        str(probes),
        "--attacker",
        "openai:scripted",
        "--base-url",
        server.openai_url,
        "-o",
        str(out),
        "--cache-mode",
        "replay",
        "--reply-max-tokens",
        "64",
    ]
    _ok(runner.invoke(app, replay))
    again = pd.read_parquet(out / "results-openai-scripted.parquet").set_index("probe_id")
    pd.testing.assert_frame_equal(again, rows)

    _ok(runner.invoke(app, ["probe", "run", str(probes), "--attacker", "data", "-o", str(out)]))
    result = runner.invoke(app, ["probe", "report", str(out)])
    _ok(result)
    html = (out / "report.html").read_text()
    for text in ("openai:scripted", "data:returns", "random", "71.4% [35.9%, 91.8%] (5/7"):
        assert text in html
    assert "plotly-graph-div" in html and "<script src=" not in html
    # top-1 recovery minus random: the Wilson interval shifted by the known random rate,
    # and the exact one-sided binomial p-value of 5 hits in 7 at that rate
    top1 = summary.loc["top1"]
    r = float(top1["random"])
    p = sum(math.comb(7, k) * r**k * (1 - r) ** (7 - k) for k in range(5, 8))
    cell = (
        f"{100 * (5 / 7 - r):+.1f} pts [{100 * (top1['low'] - r):+.1f}, "
        f"{100 * (top1['high'] - r):+.1f}] (p = {p:.3g})"
    )
    assert cell in html


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--attacker", "data:prices"], "unknown data-attacker signals"),
        (["--attacker", "data", "--levels", "bright"], "no payload matches"),
        (["--attacker", "nomodel"], "is not `provider:model`"),
        (["--attacker", "data", "--cache-mode", "sometimes"], "invalid option"),
    ],
)
def test_run_errors_are_one_line(synth_probe_file: Path, tmp_path: Path, args, message):
    result = runner.invoke(app, ["probe", "run", str(synth_probe_file), "-o", str(tmp_path), *args])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_report_without_results_fails_cleanly(tmp_path: Path):
    result = runner.invoke(app, ["probe", "report", str(tmp_path)])
    assert result.exit_code == 1 and "no results" in result.output
