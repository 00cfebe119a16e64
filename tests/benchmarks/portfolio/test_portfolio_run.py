"""The portfolio benchmark end to end against the loopback model server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tests.leak_scan import find_leaks
from tradebench.benchmarks import run_spec
from tradebench.data import load_dataset
from tradebench.llm.loopback import LoopbackServer, Reply
from tradebench.masking import MASK_LEVELS, hides_dates, hides_stocks
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_bytes, trace_lines


def _run(spec: dict, out: Path) -> pd.DataFrame:
    return pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), out)))


@pytest.mark.parametrize("level", MASK_LEVELS)
def test_no_real_symbol_or_date_reaches_the_model(
    cn_dataset_dir: Path, tmp_path: Path, level: str
) -> None:
    ds = load_dataset(cn_dataset_dir)
    symbols = [str(s) for s in ds.panel.symbols]
    with LoopbackServer(responder=trader) as server:
        summary = _run(spec_dict(cn_dataset_dir, server.openai_url, [level]), tmp_path / "run")
        requests = list(server.requests)
    llm = summary[summary["kind"] == "llm"]
    assert len(llm) == 3 and (llm["status"] == "done").all()
    assert len(requests) >= 3 * 5
    leaks = []
    for req in requests:
        text = json.dumps(req.body, ensure_ascii=False)
        leaks += find_leaks(text, symbols, ds.panel.dates, hides_stocks(level), hides_dates(level))
    assert leaks == []
    if level == "bright":  # the scan can fail: unmasked requests do carry real names and dates
        text = " ".join(json.dumps(r.body) for r in requests)
        assert find_leaks(text, symbols, ds.panel.dates, True, True)
    # the scripted trader bought the first screened/tabled name: aliases reached the broker
    orders = pd.read_parquet(
        next((tmp_path / "run" / "episodes").glob("scripted_open*")) / "orders.parquet"
    )
    assert (orders["status"] != "rejected").any()
    assert orders["symbol"].isin(symbols).all()
    if hides_stocks(level):
        assert orders["stock_id_sent"].str.startswith("asset_").all()


def test_traces_are_masked_and_complete(cn_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=trader) as server:
        _run(
            spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["open_research"]),
            tmp_path / "run",
        )
    folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
    lines = trace_lines(folder)
    assert [x["step"] for x in lines] == list(range(5))
    assert all(x["tool_calls"] for x in lines)
    ds = load_dataset(cn_dataset_dir)
    text = trace_bytes(folder).decode()
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates, True, True) == []
    steps = pd.read_parquet(folder / "steps.parquet")
    assert (steps["tool_calls"] == 2).all() and (steps["tool_calls_valid"] == 2).all()
    meta = json.loads((folder / "episode.json").read_text())
    assert meta["status"] == "done" and len(meta["prompt_sha256"]) == 64


def test_invalid_actions_retry_then_fall_back(cn_dataset_dir: Path, tmp_path: Path) -> None:
    bad = [
        Reply.tool(
            "submit_action",
            {
                "orders": [
                    {
                        "stock_id": "asset_9999",
                        "side": "BUY",
                        "target_weight": 0.1,
                        "confidence": 0.5,
                        "reason": "unknown id on purpose",
                    }
                ],
                "overall_reason": "this should be refused by checks",
            },
        ),
        Reply.tool("submit_action", {"orders": [], "overall_reason": "short"}),
        Reply.truncated("submit_action", {"orders": []}),
        Reply.garbage(),
    ]

    def responder(req):  # every submission in this run is invalid
        return bad[len(server.requests) % len(bad)]

    with LoopbackServer(responder=responder) as server:
        spec = spec_dict(
            cn_dataset_dir, server.openai_url, ["blinded"], ["memory_only"], end="2024-03-05"
        )
        spec["agents"] = spec["agents"][:1]
        summary = _run(spec, tmp_path / "run")
    row = summary[summary["kind"] == "llm"].iloc[0]
    folder = tmp_path / "run" / "episodes" / row["episode_id"]
    steps = pd.read_parquet(folder / "steps.parquet")
    assert (steps["n_orders"] == 0).all()  # fallback: no trade
    assert (steps["retries"] == 3).all()
    assert steps["parse_failures"].sum() > 0
    assert row["abstention_rate"] == 1.0 and row["parse_failure_rate"] > 0
    trace = trace_lines(folder)
    assert all(t["fallback"] for t in trace)
    feedback = [c["error"] for t in trace for c in t["tool_calls"] if c.get("error")]
    assert any("[UNKNOWN_ID]" in f for f in feedback)  # structured feedback went back
    assert not any("asset_9999" in f for f in feedback)  # quoting nothing the model sent


def test_cost_from_the_price_table(cn_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=trader) as server:
        spec = spec_dict(
            cn_dataset_dir, server.openai_url, ["blinded"], ["fixed_candidate"], end="2024-03-04"
        )
        label = "openai:test-model"
        spec["budget"] = {"prices": {label: {"input_per_mtok": 1.0, "output_per_mtok": 4.0}}}
        summary = _run(spec, tmp_path / "run")
    row = summary[summary["kind"] == "llm"].iloc[0]
    expected = (row["tokens_in"] * 1.0 + row["tokens_out"] * 4.0) / 1e6
    assert row["cost_usd"] == pytest.approx(expected) and expected > 0


def test_budget_stop_is_clean_and_resumable(cn_dataset_dir: Path, tmp_path: Path) -> None:
    from tradebench.errors import BudgetExceeded

    with LoopbackServer(responder=trader) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["fixed_candidate"])
        spec["agents"] = spec["agents"][:1]
        spec["budget"] = {"max_tokens": 8000}
        with pytest.raises(BudgetExceeded, match="rerun the same command"):
            _run(spec, tmp_path / "run")
        state = json.loads((tmp_path / "run" / "budget.json").read_text())
        spent = state["input_tokens"] + state["output_tokens"]
        assert state["calls"] == len(server.requests) > 0  # every real call was charged
        assert 0 < spent <= 8000  # and the cap held
        folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
        done_before = len((folder / "progress.jsonl").read_text().splitlines())
        assert 0 < done_before < 5
        spec["budget"] = {"max_tokens": 10_000_000}
        summary = _run(spec, tmp_path / "run")
    assert (summary[summary["kind"] == "llm"]["status"] == "done").all()
