"""The single-stock benchmark as a verifiers 0.4 taskset: `vf-eval` with the hub's knobs
against the loopback server, checked against `tradebench run` on the same task and
replies. Runs in an interpreter that has verifiers 0.4 (see `conftest.py`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import yaml
from typer.testing import CliRunner

from tests.benchmarks.single_stock.conftest import make_episode, spec_dict, task
from tests.leak_scan import find_leaks
from tradebench.benchmarks.single_stock.series import rescore_series
from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.integrations.verifiers_core import PendingStep, episode_record, on_reply
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply

HERE = Path(__file__).parent
STEPS = 3
FINMEM_CELLS = ("tsla_main", "nflx_main", "amzn_main", "msft_main")
PERSONAS = ("risk_seeking", "risk_averse", "adaptive")
SAME_COLUMNS = ["step", "date", "price", "next_price", "sent", "action", "valid", "position"]
SAME_COLUMNS += ["asset_log_return", "earned", "nav", "stance"]


def last_day_trader(req: RecordedRequest) -> Reply:
    """Follows the sign of the 3-day momentum of the latest day shown (the last user
    message that has one), so a multi-turn conversation and a fresh one per day get the
    same decision."""
    users = [m for m in (req.body or {}).get("messages") or [] if m.get("role") == "user"]
    days = [str(m.get("content")) for m in users if "3-day momentum" in str(m.get("content"))]
    text = days[-1] if days else ""
    action = "hold"
    if "3-day momentum +" in text:
        action = "buy"
    elif "3-day momentum -" in text:
        action = "sell"
    args = {"action": action, "reason": "follow the 3-day momentum", "confidence": 0.6}
    if req.forced_tool() == "submit_decision":
        return Reply.tool("submit_decision", args)
    return Reply.say(json.dumps(args))


def vf_eval(python: str, dataset: Path, out: Path) -> tuple[dict, dict, list]:
    """The default task list, the one episode of `vf-eval` with the hub knobs, and the
    requests the model saw."""
    with LoopbackServer(responder=last_day_trader) as server:
        server.push(Reply.say("let me think about it"))  # day 1: unreadable, then nudged
        args = ["tradebench-single-stock", f"--env.taskset.dataset={dataset}"]
        args += ["--env.taskset.cells", "tsla_main"]
        args += ["--env.taskset.personas", "adaptive", "--env.taskset.timesteps", str(STEPS)]
        args += ["--env.taskset.mask", "blinded", "-m", "loopback"]
        args += ["--client.base-url", server.openai_url, "--client.api-key-var", "TB_LOOPBACK"]
        args += ["--no-push", "--no-rich", "-o", str(out), "--run.name", "single-stock"]
        script = [python, str(HERE / "verifiers04_eval.py"), str(dataset), str(out / "tasks.json")]
        done = subprocess.run(
            [*script, *args],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "TB_LOOPBACK": "loopback"},
        )
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr[-3000:]
    episodes = [json.loads(line) for line in (out / "single-stock" / "traces.jsonl").open()]
    assert len(episodes) == 1
    return json.loads((out / "tasks.json").read_text()), episodes[0], requests


def tradebench_run(dataset: Path, root: Path) -> Path:
    """The same task through `tradebench run` (forced tool calls, one conversation a day)."""
    with LoopbackServer(responder=last_day_trader) as server:
        spec = spec_dict(dataset, server.openai_url, cells=["tsla_main"], personas=["adaptive"]) | {
            "concurrency": 1
        }
        spec["options"]["episode_length"] = STEPS
        spec["agents"] = spec["agents"][:1]
        root.mkdir(parents=True, exist_ok=True)
        (root / "spec.yaml").write_text(yaml.safe_dump(spec))
        result = CliRunner().invoke(
            app, ["run", str(root / "spec.yaml"), "--out", str(root / "run")]
        )
    assert result.exit_code == 0, result.output
    return root / "run" / "episodes" / "scripted_adaptive_blinded_tsla_main_s0"


def test_hub_knobs_rollout_matches_tradebench_run(
    verifiers04_python: str, ss_dataset_dir: Path, tmp_path: Path
) -> None:
    listing, episode, requests = vf_eval(verifiers04_python, ss_dataset_dir, tmp_path / "vf")
    assert listing["version"].startswith("0.4.")
    # the default taskset is FinMem's 4 cells x 3 personas, in that order
    names = [t["name"] for t in listing["tasks"]]
    assert names == [f"{c}/{p}" for c in FINMEM_CELLS for p in PERSONAS]
    assert [t["key"] for t in listing["tasks"]] == names
    assert "unknown cells ['zzz_main']" in listing["unknown_cell"]
    assert episode["ok"] and episode["env"]["id"] == "tradebench-single-stock"
    (trace,) = episode["traces"]
    assert trace["task"]["key"] == "tsla_main/adaptive" and trace["ok"]
    info = trace["info"]["tradebench"]
    scores = info["scores"]
    assert trace["rewards"] == {"composite": {"score": scores["composite"], "weight": 1.0}}
    assert trace["metrics"] == scores["components"]
    assert set(trace["metrics"]) == {"cum_return", "sharpe", "stability", "discipline"}
    assert info["task"]["symbol"] == "TSLA" and info["task"]["persona"] == "adaptive"
    assert info["guards"]["nudges"] == 1 and info["guards"]["parse_failures"] == 1
    assert info["guards"]["steps"] == STEPS and info["guards"]["valid"] == STEPS
    assert info["price_mode"] == "rebased"  # blinded hides the name, so levels are rebased
    # each day asked afresh (system + that day), as `tradebench run` asks it; the nudge
    # continues day 1's exchange (its reply and the nudge)
    assert [len(r.body["messages"]) for r in requests] == [2, 4] + [2] * (STEPS - 1)
    ds = load_dataset(ss_dataset_dir)
    text = "\n".join(json.dumps(r.body) for r in requests)
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates, True, True) == []

    folder = tradebench_run(ss_dataset_dir, tmp_path / "tb")
    expected = json.loads((folder / "metrics.json").read_text())["scores"]
    assert scores == expected  # exact floats, NaN as null on both sides
    series = pd.DataFrame(info["series"])
    steps = pd.read_parquet(folder / "steps.parquet")
    steps["date"] = steps["date"].astype(str).str[:10]
    series["date"] = series["date"].astype(str).str[:10]
    pd.testing.assert_frame_equal(
        series[SAME_COLUMNS], steps[SAME_COLUMNS], check_dtype=False, check_exact=True
    )
    assert json.loads(rescore_series(series).model_dump_json()) == scores


def test_unanswered_days_count_as_invalid_holds(ss_dataset_dir: Path) -> None:
    """An exchange cut short (a turn limit, a failed model call) still settles every day."""
    episode = make_episode(ss_dataset_dir, task("SPY", "2021-01-04", "2021-06-30"), 3)
    good = '{"action": "buy", "reason": "r", "confidence": 0.4}'
    outcome = on_reply(episode, PendingStep(), good, nudges=1)
    assert outcome.applied and "decision 2 of 3" in (outcome.message or "")
    record = episode_record(episode)
    series = pd.DataFrame(record["series"])
    assert series["valid"].tolist() == [True, False, False]
    assert series["action"].tolist() == ["buy", "hold", "hold"]
    assert series["position"].tolist() == [1, 1, 1]  # hold keeps the long
    assert record["scores"]["components"]["discipline"] == 1 / 3
    assert record["guards"]["invalid"] == 2
