"""A real portfolio run with a scripted model on the loopback server, for the report tests.

The model sees the synthetic market through the real masked tool loop (memory-only mode,
masks `blinded` and `bright`, 3 decision days of a 6-day window beside an equal-weight
baseline and the index). Its script, by step:

1. a SELL of a name it does not hold (rejected: NOT_HELD, the feedback names the masked
   identifier), then a valid BUY of the first listed name;
2. four invalid attempts, so the step falls back: a too-short overall reason (SCHEMA),
   truncated tool JSON (MALFORMED_JSON), an unreadable body (NO_SUBMISSION), the unheld
   SELL again (NOT_HELD);
3. a valid BUY at once.

It answers from the request alone, so a replay from the cache is exact.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import yaml

from tradebench.benchmarks import run_spec
from tradebench.llm.loopback import RecordedRequest, Reply
from tradebench.runs.spec import RunSpec

START, END = "2022-03-01", "2022-03-08"
WINDOW_DAYS = 6
MODEL_STEPS = 3
AGENT = "scripted"
STEP = re.compile(r"Step (\d+) of \d+\.")
IDS = re.compile(r"Identifiers: ([^,\s]+), ([^,\s]+)")
BUY_REASON = "first listed name: a <b>small</b> starter weight & no more"
OVERALL = "step {step}: start a small position in {ident} and keep the rest in cash"


def _messages(req: RecordedRequest) -> list[dict[str, Any]]:
    return list((req.body or {}).get("messages") or [])


def _text(req: RecordedRequest) -> str:
    return "\n".join(str(m.get("content") or "") for m in _messages(req))


def _feedback_so_far(req: RecordedRequest) -> int:
    """Failed attempts already answered in this step's conversation."""
    count = 0
    for m in _messages(req):
        content = str(m.get("content") or "")
        if m.get("role") in ("tool", "user") and content.startswith('{"error"'):
            count += 1
    return count


def _order(side: str, ident: str, reason: str) -> dict[str, Any]:
    return {
        "stock_id": ident,
        "side": side,
        "target_weight": 0.05,
        "confidence": 0.6,
        "reason": reason,
    }


def scripted(req: RecordedRequest) -> Reply:
    """The script above, keyed on the step label and the feedback already received."""
    step = int(STEP.search(_text(req)).group(1))
    first, second = IDS.search(_text(req)).groups()
    unheld = Reply.tool(
        "submit_action",
        {
            "orders": [_order("SELL", second, f"trim {second}, which looks overextended")],
            "overall_reason": f"step {step}: take risk off by selling {second}",
        },
    )
    valid = Reply.tool(
        "submit_action",
        {
            "orders": [_order("BUY", first, BUY_REASON)],
            "overall_reason": OVERALL.format(step=step, ident=first),
        },
    )
    done = _feedback_so_far(req)
    if step == 1:
        return unheld if done == 0 else valid
    if step == 2:
        script = [
            Reply.tool("submit_action", {"orders": [], "overall_reason": "short"}),
            Reply.truncated("submit_action", {"orders": [], "overall_reason": "x" * 40}),
            Reply.garbage(),
            unheld,
        ]
        return script[min(done, len(script) - 1)]
    return valid


def spec_dict(dataset: Path, url: str) -> dict[str, Any]:
    """The run: the scripted model capped at `MODEL_STEPS`, an equal-weight baseline."""
    return {
        "dataset": str(dataset),
        "windows": [{"start": START, "end": END}],
        "modes": ["memory_only"],
        "masks": ["blinded", "bright"],
        "seeds": [0],
        "agents": [
            {
                "name": AGENT,
                "provider": "openai",
                "model": "test-model",
                "base_url": url,
                "max_tokens": 256,
                "max_steps": MODEL_STEPS,
            },
            {"name": "ew", "baseline": "equal_weight"},
        ],
        "concurrency": 2,
    }


def replay_spec(spec: dict[str, Any], cache: Path) -> dict[str, Any]:
    """The same spec answered from `cache` only, the endpoint moved to where nothing
    listens (a replay)."""
    out = json.loads(json.dumps(spec))
    out["cache"] = {"mode": "replay", "path": str(cache)}
    out["agents"][0]["base_url"] = "http://127.0.0.1:9/v1"
    return out


def run(spec: dict[str, Any], out: Path) -> Path:
    """Run the spec into `out` (the run folder); returns `out`."""
    asyncio.run(run_spec(RunSpec.model_validate(spec), out))
    return out


def recorded_capital(run_dir: Path) -> float:
    """The run's initial capital as its spec.yaml recorded it (a blinded model run that sets
    none gets the capital that hides every lot, docs/portfolio.md)."""
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text())
    return float(spec["options"]["initial_cash"])
