"""One single-stock episode, two front doors, one score.

The same scripted model trades the same task, TSLA over FinMem's test period as
`risk_seeking`, blinded, seed 0, 8 decisions, once through `tradebench run` and once as a
verifiers 0.3 rollout. Like a real model it acts on its whole context: it follows the
momentum of the first day it reads. Each path must ask each day in a fresh conversation
(one day per request, as `tradebench run` does), so the episodes are the same day by day
(decision, stance, price), and so is every score, bit for bit.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.benchmarks.single_stock.conftest import spec_dict
from tradebench.benchmarks import run_spec
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.runs.spec import RunSpec

HERE = Path(__file__).parent
STEPS = 8
BLIND_DAY = 3
SAME = ["step", "date", "settle_date", "symbol", "persona", "stance", "price", "next_price",
        "sent", "action", "valid"]  # fmt: skip


def _days(request: RecordedRequest) -> list[str]:
    """The day messages (observations) in a request's context."""
    messages = (request.body or {}).get("messages") or []
    return [
        m["content"]
        for m in messages
        if m.get("role") == "user" and "3-day momentum" in str(m.get("content"))
    ]


def anchored(request: RecordedRequest) -> Reply:
    """Follows the 3-day momentum of the first day in its context (tool or JSON reply);
    on decision 3 it never answers readably (an invalid hold, after its nudge)."""
    days = _days(request) or [""]
    if f"decision {BLIND_DAY} of" in days[-1]:
        return Reply.say("I would rather not say")
    first = days[0]
    action = "buy" if "3-day momentum +" in first else "sell"
    args = {"action": action, "reason": "the first day I read set the trend", "confidence": 0.6}
    if request.forced_tool() == "submit_decision":
        return Reply.tool("submit_decision", args)
    return Reply.say(json.dumps(args))


def _run(dataset: Path, url: str, out: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    spec = spec_dict(
        dataset, url, cells=["tsla_main"], personas=["risk_seeking"], episode_length=STEPS
    )
    spec["agents"] = spec["agents"][:1]
    asyncio.run(run_spec(RunSpec.model_validate(spec), out))
    (folder,) = list((out / "episodes").iterdir())
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    return pd.read_parquet(folder / "steps.parquet"), metrics["scores"]


def _rollout(python: str, dataset: Path, url: str, out: Path) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(HERE / "verifiers_rollout.py"), str(dataset), url, str(out), str(STEPS)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["error"] is None
    return result


def test_run_and_verifiers_score_one_episode_alike(
    verifiers_python: str, ss_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=anchored) as server:
        series, scores = _run(ss_dataset_dir, server.openai_url, tmp_path / "run")
        ran = len(server.requests)
        rollout = _rollout(verifiers_python, ss_dataset_dir, server.openai_url, tmp_path / "r")
        requests = list(server.requests)
    days = [len(_days(r)) for r in requests]
    assert days[:ran] == days[ran:] == [1] * (STEPS + 1)  # one day per request (+ a nudge)
    info = rollout["info"]["tradebench"]
    assert info["task"]["symbol"] == "TSLA" and info["task"]["persona"] == "risk_seeking"
    theirs = pd.DataFrame(info["series"])
    assert len(series) == len(theirs) == STEPS
    assert series["action"].nunique() > 1  # the model acted on what it saw, not by rote
    assert list(series["valid"]) == [s != BLIND_DAY for s in range(1, STEPS + 1)]
    mine = series[SAME].astype(str).to_dict("records")
    assert mine == theirs[SAME].astype(str).to_dict("records")
    assert info["scores"] == scores  # both JSON: the same numbers, bit for bit
    assert rollout["reward"] == pytest.approx(scores["composite"])
