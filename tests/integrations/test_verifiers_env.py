"""The single-stock benchmark as a verifiers environment, evaluated against the loopback
server from an interpreter that has verifiers 0.3.x (see `conftest.py`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.single_stock.conftest import make_episode, task, trader
from tests.leak_scan import find_leaks
from tradebench.benchmarks.single_stock.series import rescore_series
from tradebench.data import load_dataset
from tradebench.integrations.verifiers_env import PendingStep, on_reply
from tradebench.llm.loopback import LoopbackServer, Reply

HERE = Path(__file__).parent
STEPS = 8


def test_one_task_evaluates_against_the_loopback_server(
    verifiers_python: str, ss_dataset_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "result.json"
    with LoopbackServer(responder=trader) as server:
        server.push(Reply.say("let me think about it"))  # day 1: unreadable, then nudged
        cmd = [verifiers_python, str(HERE / "verifiers_rollout.py"), str(ss_dataset_dir)]
        done = subprocess.run(
            [*cmd, server.openai_url, str(out), str(STEPS)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["version"].startswith("0.3.") and result["error"] is None
    assert result["rows"] == 12  # 4 default FinMem cells x 3 personas
    names, weights = result["rubric"]["names"], result["rubric"]["weights"]
    mine = dict(zip(names, weights, strict=True))
    assert mine["composite"] == 1.0
    assert all(mine[c] == 0.0 for c in ("cum_return", "sharpe", "stability", "discipline"))
    info = result["info"]["tradebench"]
    scores = info["scores"]
    assert result["reward"] == pytest.approx(scores["composite"])
    assert result["metrics"]["discipline"] == pytest.approx(1.0)
    assert info["task"]["symbol"] == "TSLA" and info["task"]["persona"] == "risk_seeking"
    assert info["guards"]["nudges"] == 1 and info["guards"]["parse_failures"] == 1
    assert len(requests) == STEPS + 1 and result["stop_condition"] == "has_final_env_response"
    series = pd.DataFrame(info["series"])
    assert len(series) == STEPS and series["valid"].all()
    rescored = json.loads(rescore_series(series).model_dump_json())
    assert rescored == scores
    # masked: every day's message went to the model without real names or dates
    ds = load_dataset(ss_dataset_dir)
    text = "\n".join(json.dumps(r.body) for r in requests)
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates, True, True) == []
    # each day is asked afresh (system + that day), as `tradebench run` asks it; the nudge
    # continues day 1's exchange (its reply and the nudge)
    assert [len(r.body["messages"]) for r in requests] == [2, 4] + [2] * (STEPS - 1)


def test_reply_handling_without_verifiers(ss_dataset_dir: Path) -> None:
    """The adapter's turn logic: nudge once, then an invalid hold; good JSON applies."""
    episode = make_episode(ss_dataset_dir, task("SPY", "2021-01-04", "2021-06-30"), 3)
    pending = PendingStep()
    first = on_reply(episode, pending, "hmm", nudges=1)
    assert not first.applied and "could not be read" in first.message
    second = on_reply(episode, pending, "", nudges=1)
    assert second.applied and episode.step == 1
    good = '{"action": "sell", "reason": "r", "confidence": 0.4}'
    third = on_reply(episode, PendingStep(), good, nudges=1)
    assert third.applied and "decision 3 of 3" in third.message
    last = on_reply(episode, PendingStep(), good, nudges=1)
    assert last.applied and episode.done
    series = episode.series()
    assert series["valid"].tolist() == [False, True, True]
    assert series["nudges"].tolist() == [1, 0, 0]
    assert series["empty_replies"].tolist() == [1, 0, 0]
    assert series["position"].tolist() == [0, -1, -1]
