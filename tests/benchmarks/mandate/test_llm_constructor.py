"""The LLM constructor against the loopback server: coded feedback, the critic, the log."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.risk import compile_mandate, is_feasible
from tradebench.runs.trace import trace_bytes

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

TOOL = "propose_weights"
POOL = ["AMZN", "COIN", "MSFT", "NFLX", "TSLA"]


def _weights(**w: float) -> dict:
    return {"weights": [{"symbol": k, "weight": v} for k, v in w.items()], "rationale": "test"}


def test_llm_constructor_is_fed_back_and_projected(mandate_dataset: Path, tmp_path: Path) -> None:
    invalid = {
        "weights": [
            {"symbol": "COIN", "weight": 0.7},
            {"symbol": "COIN", "weight": 0.2},
            {"symbol": "NFLX", "weight": 0.5},
        ],
        "rationale": "too much",
    }
    script = [
        Reply.tool(TOOL, invalid),  # day 1: refused with codes, retried
        Reply.tool(TOOL, _weights(COIN=0.6, NFLX=0.3)),  # infeasible: the critic projects
        Reply.tool(TOOL, _weights(AMZN=0.2, COIN=0.2, MSFT=0.2, NFLX=0.19, TSLA=0.19)),
    ]
    with LoopbackServer(script=script) as server:
        spec = example_spec(mandate_dataset, llm=True, pool_sizes=[5], max_steps=3, pool="random")
        spec["agents"] = [
            {
                "name": "llm",
                "provider": "openai",
                "model": "scripted",
                "base_url": server.openai_url,
            }
        ]
        spec["modes"] = ["daily"]
        run(spec, tmp_path / "run")
        requests = list(server.requests)
    assert all(r.forced_tool() == TOOL for r in requests) and len(requests) == 4
    schema = requests[0].tool_schemas()[TOOL]
    assert schema["properties"]["weights"]["items"]["properties"]["symbol"]["enum"] == POOL
    feedback = json.dumps(requests[1].body["messages"][-1])
    assert "DUPLICATE_NAME" in feedback and "OVER_INVESTED" in feedback

    folder = tmp_path / "run/episodes/llm_daily_k5_s0_20250602-20250804"
    lines = [json.loads(x)["mandate"] for x in (folder / "progress.jsonl").read_text().splitlines()]
    assert lines[0]["invalid_proposals"] == 1
    assert lines[0]["feedback_codes"] == ["DUPLICATE_NAME", "OVER_INVESTED"]
    assert lines[0]["proposed"]["COIN"] == 0.6 and lines[0]["changed"]
    constraints = compile_mandate(spec["options"]["mandate"])
    sectors = {"AMZN": "CD", "TSLA": "CD", "COIN": "F", "MSFT": "IT", "NFLX": "CS"}
    for line in lines:
        assert is_feasible(line["projected"], constraints, sectors=sectors)
    assert lines[0]["projected"]["COIN"] == 0.25
    assert not lines[1]["changed"]
    assert sum(lines[2]["projected"].values()) == 0.0  # default reply: no weights, all cash

    adherence = pd.read_parquet(folder / "adherence.parquet")
    first = adherence[adherence["step"] == 0].set_index(["constraint", "subject"])
    coin = first.loc[("max_weight", "COIN")]
    assert coin["binding"] and coin["violated"]
    assert (
        coin["proposed"] == 0.6 and abs(coin["projected"] - 0.25) < 1e-9 and coin["bound"] == 0.25
    )
    record = json.loads((folder / "episode.json").read_text())
    assert record["headline"]["invalid_proposals"] == 1 and record["tokens"] > 0
    orders = pd.read_parquet(folder / "orders.parquet")
    day1 = orders[orders["date"] == orders["date"].min()].set_index("symbol")
    assert abs(day1.loc["COIN", "target_weight"] - 0.25) < 1e-9  # the broker got the projection
    steps = pd.read_parquet(folder / "steps.parquet")
    assert steps["retries"].tolist() == [1, 0, 0]
    trace = trace_bytes(folder).decode().splitlines()
    assert len(trace) == 3


def _equal_weights(request: RecordedRequest) -> Reply:
    """An LLM constructor that proposes equal weights over the pool it is offered (98% in
    all, the rest cash); the critic projects what breaks a bound."""
    from tradebench.llm.loopback import default_responder

    schema = request.tool_schemas().get(TOOL)
    if request.forced_tool() != TOOL or schema is None:
        return default_responder(request)
    pool = schema["properties"]["weights"]["items"]["properties"]["symbol"]["enum"]
    return Reply.tool(TOOL, _weights(**dict.fromkeys(pool, round(0.98 / len(pool), 4))))


def test_the_example_runs_every_cell_with_its_model_agent(
    mandate_dataset: Path, tmp_path: Path
) -> None:
    """The shipped example as written (every pool size, seed and cadence, the whole window),
    its model agent served by the loopback server: every episode finishes all 44 days, and
    every model proposal reaches the book through the critic."""
    import yaml

    from tests.benchmarks.mandate.conftest import EXAMPLE

    written = yaml.safe_load(EXAMPLE.read_text())
    with LoopbackServer(responder=_equal_weights) as server:
        spec = example_spec(mandate_dataset, llm=True)
        model = next(a for a in spec["agents"] if "provider" in a)
        model["base_url"] = server.openai_url
        summary = pd.read_parquet(run(spec, tmp_path / "run"))
    llm = summary[summary["agent"] == model["name"]]
    cells = len(written["options"]["pool_sizes"]) * len(written["seeds"]) * len(written["modes"])
    assert len(llm) == cells and (llm["status"] == "done").all()
    assert (summary["status"] == "done").all() and (summary["n_steps"] == 44).all()
    assert (llm["total_return"] != 0.0).all()  # the proposals were traded, not held as cash
