"""KTD-Fin's protocol as its paper prints it (prompt version v4): the instructions it gives,
the pure-JSON answer of memory-only and fixed-candidate, and the limit filter on candidates,
each through a run against the loopback server."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tradebench.agents.json_answer import read_json_answer
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.portfolio.options import PortfolioOptions
from tradebench.benchmarks.portfolio.prompt_files import load_prompts, system_prompt
from tradebench.benchmarks.portfolio.submit_schema import SubmitLimits
from tradebench.errors import ConfigError
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.market.rules import MarketRules
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines

EMPTY = json.dumps({"orders": [], "overall_reason": "no basis for a trade today"})


def _run(spec: dict, run_dir: Path) -> Path:
    return asyncio.run(run_spec(RunSpec.model_validate(spec), run_dir))


def _spec(dataset: Path, url: str, mode: str, options: dict, end: str = "2024-03-05") -> dict:
    spec = spec_dict(dataset, url, ["bright"], [mode], end=end)
    spec["agents"] = spec["agents"][:1]
    spec["options"] = {"prompt_version": "v4", **options}
    return spec


def test_v4_prompts_say_what_the_paper_prints() -> None:
    """Each instruction of the paper is in v4 (and was missing from v3, which is kept)."""
    rules = MarketRules.cn()
    new, old = load_prompts("v4"), load_prompts("v3")
    research = system_prompt(new, "open_research", rules)
    for phrase in (
        "highest score this benchmark awards",  # the goal
        "this message, the context above it and what the tools return",  # the boundary
        "previous trading day's close (T-1)",
        "about 1% to 3% of NAV",  # the cash buffer
        "needs no new BUY order",
        "If you are unsure, trade less",
    ):
        assert phrase in research.replace("\n", " ")
        assert phrase not in system_prompt(old, "open_research", rules).replace("\n", " ")
    memory = system_prompt(new, "memory_only", rules, answer_form="json").replace("\n", " ")
    assert "If you hold a view on a particular identifier, you are free to trade on it" in memory
    assert "one JSON object and nothing else" in memory and "submit_action" not in memory
    forced = system_prompt(new, "memory_only", rules, answer_form="tool")
    assert "Call submit_action" in forced and "JSON object and nothing else" not in forced
    with pytest.raises(ConfigError, match="no JSON answer form"):
        system_prompt(old, "memory_only", rules, answer_form="json")


def test_answer_form_follows_the_prompt_version_and_json_needs_v4() -> None:
    assert PortfolioOptions().resolved_answer_form("memory_only") == "tool"
    v4 = PortfolioOptions(prompt_version="v4")
    assert [v4.resolved_answer_form(m) for m in ("memory_only", "fixed_candidate")] == [
        "json",
        "json",
    ]
    assert v4.resolved_answer_form("open_research") == "tool" and v4.resolved_limit_filter
    assert (
        PortfolioOptions(prompt_version="v4", answer_form="tool").resolved_answer_form(
            "memory_only"
        )
        == "tool"
    )
    assert not PortfolioOptions().resolved_limit_filter
    spec = RunSpec.model_validate(
        {
            "dataset": "x",
            "agents": [{"name": "b", "baseline": "equal_weight"}],
            "options": {"answer_form": "json"},
        }
    )
    with pytest.raises(ConfigError, match="answer_form json needs prompt_version v4"):
        spec.options_as(PortfolioOptions)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (EMPTY, True),
        (f"```json\n{EMPTY}\n```", True),
        (f"  {EMPTY}\n", True),
        (f"Here is my answer: {EMPTY}", False),
        (f"{EMPTY} I hope this helps", False),
        ("[1, 2]", False),
        ("", False),
        ('{"orders": [', False),
    ],
)
def test_only_a_pure_json_object_is_an_answer(text: str, ok: bool) -> None:
    value, why = read_json_answer(text)
    assert (value is not None) is ok and (why is None) is ok


def _garbage_then_json(request: RecordedRequest) -> Reply:
    """First attempt of each step is prose, the retry is a fenced JSON object."""
    retried = any(m["role"] == "assistant" for m in request.body["messages"])
    return Reply.say(f"```json\n{EMPTY}\n```" if retried else "I would hold everything today.")


@pytest.mark.parametrize("mode", ["memory_only", "fixed_candidate"])
def test_json_answers_are_retried_and_counted_like_forced_submissions(
    cn_dataset_dir: Path, tmp_path: Path, mode: str
) -> None:
    """No tools and no forced tool_choice reach the model; an unreadable reply is one parse
    failure and one retry; the step then trades nothing without falling back."""
    with LoopbackServer(responder=_garbage_then_json) as server:
        _run(_spec(cn_dataset_dir, server.openai_url, mode, {}), tmp_path / "run")
        requests = list(server.requests)
    assert requests and all(r.forced_tool() is None and not r.tool_schemas() for r in requests)
    system = requests[0].body["messages"][0]["content"]
    expected = system_prompt(
        load_prompts("v4"), mode, MarketRules.cn(), "CNY", SubmitLimits.for_tokens(256), "json"
    )
    assert system == expected
    folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
    steps = pd.read_parquet(folder / "steps.parquet")
    assert len(steps) == 3 and len(requests) == 2 * len(steps)
    assert (steps["parse_failures"] == 1).all() and (steps["retries"] == 1).all()
    assert not steps["fallback"].any()
    episode = json.loads((folder / "episode.json").read_text())
    assert episode["answer_form"] == "json" and episode["prompt_version"] == "v4"


def test_unreadable_json_answers_fall_back_after_three_retries(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=lambda r: Reply.say("BUY the best one")) as server:
        summary = _run(
            _spec(cn_dataset_dir, server.openai_url, "memory_only", {}), tmp_path / "run"
        )
        calls = server.count()
    steps = pd.read_parquet(
        next((tmp_path / "run" / "episodes").glob("scripted_*")) / "steps.parquet"
    )
    assert steps["fallback"].all() and (steps["parse_failures"] == 4).all()
    assert calls == 4 * len(steps)
    row = pd.read_parquet(summary).set_index("agent").loc["scripted"]
    assert row["parse_failure_rate"] == 1.0 and row["fallback_steps"] == len(steps)


def test_the_forced_tool_stays_an_option_under_v4(cn_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=trader) as server:
        spec = _spec(cn_dataset_dir, server.openai_url, "memory_only", {"answer_form": "tool"})
        _run(spec, tmp_path / "run")
        requests = list(server.requests)
    assert requests and all(r.forced_tool() == "submit_action" for r in requests)


# ---------------------------------------------------------------- the limit filter
def _limit_names(shared_data: Path) -> tuple[str, str]:
    """From the raw files (the exchange's own daily change, the membership list): a main-board
    member that closed limit-down on 2024-02-02 without being locked there (so a buy at that
    open fills), and one that closed limit-up on 2024-02-06, a member on 2024-02-07."""
    raw = pd.read_parquet(shared_data / "cn" / "csi300_members_daily_2018_2026.parquet")
    raw = raw[raw["symbol"].str.match(r"^(SH60|SZ00)")]
    members = pd.read_csv(shared_data / "universe" / "csi300_membership.csv", dtype=str)

    def member(day: str) -> set[str]:
        start = pd.to_datetime(members["opt-in"])
        end = pd.to_datetime(members["opt-out"])
        ts = pd.Timestamp(day)
        return set(members.loc[(start <= ts) & (end.isna() | (ts < end)), "symbol"])

    d5 = raw[raw["date"] == "2024-02-02"]
    down = d5[
        (d5["change"] <= -9.9) & (d5["open"] > d5["low"]) & d5["symbol"].isin(member("2024-02-02"))
    ]
    d6 = raw[raw["date"] == "2024-02-06"]
    up = d6[(d6["change"] >= 9.9) & d6["symbol"].isin(member("2024-02-07"))]
    return sorted(down["symbol"])[0], sorted(up["symbol"])[0]


def _limit_prober(down: str, up: str):
    """Buys `down` on 02-02, tries to sell it on 02-05 and to buy `up` on 02-07; after a
    refusal it answers with no orders."""

    def respond(request: RecordedRequest) -> Reply:
        messages = request.body["messages"]
        day = re.search(r"Decision day (\S+),", messages[1]["content"]).group(1)
        refused = len(messages) > 2
        order = {"confidence": 0.5, "reason": "probing the limit filter"}
        orders = []
        if day == "2024-02-02":
            orders = [{"stock_id": down, "side": "BUY", "target_weight": 0.05, **order}]
        elif day == "2024-02-05" and not refused:
            orders = [{"stock_id": down, "side": "SELL", "target_weight": 0.0, **order}]
        elif day == "2024-02-07" and not refused:
            orders = [{"stock_id": up, "side": "BUY", "target_weight": 0.05, **order}]
        text = {"orders": orders, "overall_reason": "probing the limit filter today"}
        return Reply.say(json.dumps(text))

    return respond


@pytest.mark.parametrize("limit_filter", [True, False])
def test_limit_names_leave_the_candidates(
    cn_dataset_dir: Path, shared_data: Path, tmp_path: Path, limit_filter: bool
) -> None:
    """With the filter, the limit-down holding cannot be sold and the limit-up name is neither
    listed nor buyable (each refusal coded); without it both orders are accepted."""
    down, up = _limit_names(shared_data)
    with LoopbackServer(responder=_limit_prober(down, up)) as server:
        spec = _spec(
            cn_dataset_dir, server.openai_url, "memory_only", {"limit_filter": limit_filter}
        )
        spec["windows"] = [{"start": "2024-02-02", "end": "2024-02-07"}]
        _run(spec, tmp_path / "run")
        requests = list(server.requests)
    folder = next((tmp_path / "run" / "episodes").glob("scripted_*"))
    steps = pd.read_parquet(folder / "steps.parquet")
    assert len(steps) == 4
    listing = {
        re.search(r"Decision day (\S+),", u).group(1): u
        for u in (r.body["messages"][1]["content"] for r in requests)
    }
    errors = [c["error"] or "" for t in trace_lines(folder) for c in t["tool_calls"]]
    if limit_filter:
        assert up not in listing["2024-02-07"]
        assert list(steps["retries"]) == [0, 1, 0, 1]
        assert any("[LIMIT_DOWN]" in e for e in errors)
        assert not any(down in e for e in errors if "[LIMIT_DOWN]" in e)  # names no stock
        assert any("[NOT_IN_POOL]" in e for e in errors)
        assert not any(up in e for e in errors if "[NOT_IN_POOL]" in e)
    else:
        assert up in listing["2024-02-07"]
        assert list(steps["retries"]) == [0, 0, 0, 0] and not any(errors)


def test_a_folder_written_before_the_new_options_reruns_unchanged(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    """A run folder whose spec.yaml has no `answer_form`/`limit_filter` (written before they
    existed) reruns with the same spec: the new options resolve to the earlier behaviour
    under its recorded prompt version, so nothing is refused or run again."""
    import yaml

    with LoopbackServer(responder=trader) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["bright"], ["memory_only"])
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-04"}]
        _run(spec, tmp_path / "run")
        first = server.count()
        written = tmp_path / "run" / "spec.yaml"
        old = yaml.safe_load(written.read_text())
        assert old["options"]["prompt_version"] == "v3" and old["options"]["answer_form"] is None
        for key in ("answer_form", "limit_filter"):
            del old["options"][key]
        written.write_text(yaml.safe_dump(old, sort_keys=False))
        _run(spec, tmp_path / "run")
        assert server.count() == first  # every episode was done: no model call again
        assert all(r.forced_tool() == "submit_action" for r in server.requests)
