"""The KTD-Fin portfolio protocol as stated: rules from the engine, no nudge to trade, a
candidate pool that bounds buys, no order cap, research then its own submission phase,
the benchmark by name, and a parse-failure rate that is a share of steps."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict
from tests.leak_scan import find_leaks
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, candidate_pool, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts, rules_text, system_prompt
from tradebench.benchmarks.portfolio.tools import submit_tool
from tradebench.data import Dataset, load_dataset
from tradebench.data.boards import board_of
from tradebench.errors import ToolError
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import build_masker
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines
from tradebench.view import MarketView

DAY = "2024-03-01"
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@pytest.fixture(scope="module")
def cn(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


def _numbers(text: str) -> set[float]:
    return {float(m.replace(",", "")) for m in NUMBER.findall(text.replace("T+1", ""))}


@pytest.mark.parametrize("rules", [MarketRules.cn(), MarketRules.cn(250_000.0), MarketRules.us()])
def test_every_number_in_the_rules_text_comes_from_the_rules_object(rules: MarketRules) -> None:
    text = rules_text(load_prompts(), rules, "CNY")
    allowed = {rules.initial_cash, rules.lot_size, rules.buy_cost_bps, rules.sell_cost_bps}
    allowed |= {rules.min_cost} | {round(v * 100, 6) for v in rules.limit_thresholds().values()}
    assert _numbers(text) and _numbers(text) <= allowed
    if rules.market == "cn":  # the thresholds the broker applies, not the nominal 10% / 20%
        assert "±9.5% on the main board" in text and "±19.5% on ChiNext and STAR" in text
        assert "±29.5% on the Beijing exchange" in text and "10%" not in text


def test_the_prompt_states_the_limits_the_engine_applies(cn: Dataset) -> None:
    thresholds = MarketRules.cn().limit_thresholds()
    panel = cn.panel
    for col, symbol in enumerate(panel.symbols):
        assert panel.limit_threshold[col] == thresholds[board_of(str(symbol))], symbol


def _ctx(ds: Dataset, held: bool = True) -> StepContext:
    view = MarketView(ds, DAY)
    account = Account(600_000)
    if held:
        account.record_buy("SH600519", 100, 0.0, 0.0, t_plus_one=True)
        account.cash = 600_000
        account.unlock()
    snapshot = account.snapshot(view.last("close"), view.column_map)
    return StepContext(view, snapshot, MarketRules.cn())


def _user(ds: Dataset, mode: str, level: str = "bright") -> str:
    masker = build_masker(level, ds.panel.symbols, ds.panel.dates, DAY, seed=0, episode_id="e")
    step = StepInfo(2, 5, (), 0.01, 0.002)
    return user_message(_ctx(ds), masker, load_prompts(), mode, step, 10, "CSI300", "CNY")


def test_memory_only_offers_no_price_and_no_nudge(cn: Dataset) -> None:
    system = system_prompt(load_prompts(), "memory_only", MarketRules.cn())
    assert "empty order list" in " ".join(system.split())
    for nudge in ("conviction", "decide from what you already know", "cash buffer"):
        assert nudge not in system.lower()
    user = _user(cn, "memory_only")
    holding = next(line for line in user.splitlines() if line.startswith("- SH600519"))
    assert "close" not in holding and "weight" in holding
    fixed = _user(cn, "fixed_candidate")
    assert "close" in next(x for x in fixed.splitlines() if x.startswith("- SH600519"))


def test_user_message_names_the_benchmark_cash_share_and_the_window(cn: Dataset) -> None:
    user = _user(cn, "fixed_candidate", "blinded")
    assert "vs CSI300" in user and "(60.00% of NAV)" not in user
    assert re.search(r"cash CNY 600,000\.00 \(\d+\.\d\d% of NAV\)", user)
    pool = len(candidate_pool(_ctx(cn), 10))
    window = re.search(r"Candidate pool: (\d+) stocks .* window (day_-\d+) \.\. (day_-\d+) "
                       r"\((\d+) trading days", user)  # fmt: skip
    assert window and int(window.group(1)) == pool and window.group(3) == "day_-1"
    assert int(window.group(4)) == 252 and window.group(2) == "day_-252"
    assert "at most" not in user  # no cap on orders
    ds_symbols = [str(s) for s in cn.panel.symbols]
    assert find_leaks(user, ds_symbols, cn.panel.dates, True, True) == []


def test_buys_outside_the_candidate_pool_are_refused_with_a_code(cn: Dataset) -> None:
    ctx = _ctx(cn, held=False)
    masker = build_masker("blinded", cn.panel.symbols, cn.panel.dates, DAY, 0, "e")
    pool = frozenset(ctx.view.symbols[candidate_pool(ctx, 10)].tolist())
    outside = sorted(ctx.universe_set - pool)[0]
    inside = sorted(pool)[0]

    def order(symbol: str) -> dict:
        return {"stock_id": masker.symbol_label(symbol), "side": "BUY", "target_weight": 0.01,
                "confidence": 0.5, "reason": "testing the candidate pool"}  # fmt: skip

    tool = submit_tool(ctx, masker, pool)
    with pytest.raises(ToolError) as refused:
        tool.accept({"orders": [order(outside)], "overall_reason": "one name outside the pool"})
    assert "[NOT_IN_POOL]" in str(refused.value) and outside not in str(refused.value)
    many = [order(s) for s in sorted(pool)[:25]]
    accepted = tool.accept({"orders": many, "overall_reason": "many orders, no cap on them"})
    assert len(accepted.action.orders) == min(25, len(pool)) and inside in pool
    free = submit_tool(ctx, masker)  # other modes: the universe bounds buys
    free.accept({"orders": [order(outside)], "overall_reason": "outside the pool is fine here"})


def _pool_breaker(request: RecordedRequest) -> Reply:
    """Buys the alphabetically first universe id not in the table, then one in it."""
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    table = set(re.findall(r"^\| (asset_\d+) \|", user, flags=re.MULTILINE))
    refused = any("NOT_IN_POOL" in (m.get("content") or "") for m in request.body["messages"])
    listed = sorted(set(re.findall(r"asset_\d+", user)) - table)
    pick = sorted(table)[0] if refused or not listed else listed[0]
    order = {"stock_id": pick, "side": "BUY", "target_weight": 0.05, "confidence": 0.5,
             "reason": "a name from the preview list"}  # fmt: skip
    return Reply.tool(
        "submit_action", {"orders": [order], "overall_reason": "probing the candidate pool"}
    )


def test_an_out_of_pool_buy_is_retried_end_to_end(cn_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=_pool_breaker) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["fixed_candidate"])
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-04"}]
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
    folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
    steps = pd.read_parquet(folder / "steps.parquet")
    assert (steps["retries"] == 1).all() and not steps["fallback"].any()
    trace = trace_lines(folder)
    codes = [c["error"] for t in trace for c in t["tool_calls"] if not c["valid"]]
    assert codes and all("[NOT_IN_POOL]" in c for c in codes)


def _researcher(request: RecordedRequest) -> Reply:
    """Calls a research tool whenever allowed; submits nothing valid."""
    if request.forced_tool() == "submit_action":
        return Reply.garbage()
    return Reply.tool("get_market_context", {})


def test_research_then_submission_and_a_rate_in_the_unit_interval(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=_researcher) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["bright"], ["open_research"])
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-04"}]
        spec["options"] = {"max_tool_calls": 2, "max_submit_retries": 2}
        summary = asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        requests = list(server.requests)
    research = [r for r in requests if r.forced_tool() is None]
    assert research and all("submit_action" not in r.tool_schemas() for r in research)
    folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
    steps = pd.read_parquet(folder / "steps.parquet")
    assert steps["research_cap_hit"].all() and steps["fallback"].all()
    assert (steps["parse_failures"] == 3).all()  # three unreadable submissions per step
    row = pd.read_parquet(summary).set_index("agent").loc["scripted"]
    assert row["parse_failure_rate"] == 1.0 and row["malformed_reply_rate"] == 3.0
    assert row["fallback_steps"] == len(steps)


@pytest.mark.parametrize("mode", ["memory_only", "open_research"])
def test_every_step_sends_the_modes_system_prompt_whole(
    cn_dataset_dir: Path, tmp_path: Path, mode: str
) -> None:
    """What reaches the model as the system turn, at every step of a multi-day episode, is
    the mode's prompt with the engine's rules and the reply's limits (the agent builds it
    once per episode)."""
    from tradebench.benchmarks.portfolio.submit_schema import SubmitLimits

    with LoopbackServer() as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["bright"], [mode])
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        requests = list(server.requests)
    expected = system_prompt(
        load_prompts(), mode, MarketRules.cn(), "CNY", SubmitLimits.for_tokens(256)
    )
    systems = [m["content"] for r in requests for m in r.body["messages"] if m["role"] == "system"]
    days = len(
        pd.read_parquet(next((tmp_path / "run" / "episodes").glob("scripted_*")) / "steps.parquet")
    )
    assert days >= 4 and len(systems) >= days
    assert all(s == expected for s in systems)


def test_memory_only_lists_exactly_the_point_in_time_universe(
    cn: Dataset, shared_data: Path
) -> None:
    """The identifier listing is the index as it stood on the decision day (read here from
    the membership file itself), each under its alias, nothing more and nothing less."""
    members = pd.read_csv(shared_data / "universe" / "csi300_membership.csv", dtype=str)
    day = pd.Timestamp(DAY)
    start = pd.to_datetime(members["opt-in"])
    end = pd.to_datetime(members["opt-out"]).fillna(pd.Timestamp.max)
    listed = set(members.loc[(start <= day) & (day < end), "symbol"])
    expected = listed & {str(s) for s in cn.panel.symbols}
    masker = build_masker("blinded", cn.panel.symbols, cn.panel.dates, DAY, seed=0, episode_id="e")
    user = _user(cn, "memory_only", "blinded")
    listing = re.search(r"Tradable universe: (\d+) stocks\. Identifiers: (.*)", user)
    assert listing is not None
    shown = listing.group(2).strip().split(", ")
    assert shown == sorted(shown) and int(listing.group(1)) == len(shown) and len(shown) > 250
    assert set(shown) == {masker.alias_of[s] for s in expected}
