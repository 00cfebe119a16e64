"""Forced submissions reach endpoints with `tool_choice` quirks, through the real tool loop.

Each loopback personality reproduces one endpoint's behaviour (LM Studio rejects the
object form, DeepSeek's thinking models any `tool_choice`, MiniMax all but `none`/`auto`,
Ollama ignores it, a model whose native calling is broken answers only in text). The
oracle is written from those behaviours, not from the adapter: the rung each one must end
on, the wire forms the server must have seen in order, and a valid submission.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel, Field

from tests.benchmarks.portfolio.conftest import spec_dict
from tradebench.agents.tool_loop import LoopResult, run_tool_loop
from tradebench.agents.tools import SubmitTool, Tool
from tradebench.benchmarks import run_spec
from tradebench.errors import ProviderError
from tradebench.llm.base import ChatModel, get_model
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import REASONING_TEXT, LoopbackServer, Quirk
from tradebench.llm.prices import quote_price
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig, ToolSpec, Usage
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.01, jitter=0.0, timeout_s=5)


class Action(BaseModel):
    orders: list[str] = Field(max_length=3)
    reason: str = Field(max_length=40)


SUBMIT = SubmitTool.from_model("submit_action", "Submit the decision.", Action)
PRICE = Tool(
    spec=ToolSpec(
        name="get_price",
        description="Last close of a stock.",
        parameters={
            "type": "object",
            "properties": {"symbol": {"type": "string", "maxLength": 8}},
            "required": ["symbol"],
        },
    ),
    fn=lambda args: {"close": 1.0},
)
FORCED = {"type": "function", "function": {"name": "submit_action"}}
ABSENT = "absent"

# personality -> (rung the forced call must end on, tool_choice values the server sees in
# order: research's first, then the forced call's)
CASES: dict[str, tuple[str, list[Any]]] = {
    "none": ("object", ["auto", FORCED]),
    "object_choice_rejected": ("required", ["auto", FORCED, "required"]),
    "choice_rejected": ("auto", ["auto", ABSENT, FORCED, "required", ABSENT]),
    "none_auto_only": ("auto", ["auto", FORCED, "required", ABSENT]),
    "choice_ignored": ("auto", ["auto", FORCED, "required", ABSENT]),
    "text_only": ("text", ["auto", FORCED, "required", ABSENT, ABSENT]),
}


def _model(server: LoopbackServer, cache: ResponseCache | None = None, **fields: Any) -> ChatModel:
    config = ModelConfig(
        provider="openai", model="quirky", base_url=server.openai_url, max_tokens=200, **fields
    )
    return get_model(config, retry=FAST, cache=cache)


def _loop(model: ChatModel) -> LoopResult:
    return asyncio.run(
        run_tool_loop(model, system="Decide.", user="Go.", tools=[PRICE], submit=SUBMIT)
    )


def _quirks(name: str) -> list[Quirk]:
    return [] if name == "none" else [name]  # type: ignore[list-item]


def _choices(server: LoopbackServer, since: int = 0) -> list[Any]:
    return [(r.body or {}).get("tool_choice", ABSENT) for r in server.requests[since:]]


@pytest.mark.parametrize("personality", sorted(CASES))
def test_the_ladder_reaches_a_valid_submission_in_every_personality(personality: str) -> None:
    rung, seen = CASES[personality]
    with LoopbackServer(quirks=_quirks(personality)) as server:
        result = _loop(_model(server))
        wire = _choices(server)
    assert result.stop_reason == "submitted" and result.action == Action(orders=[], reason="x")
    submit = [c for c in result.model_calls if c.phase == "submit"]
    assert [c.tool_choice_rung for c in submit] == [rung]
    assert wire == seen  # every form sent but the two that worked was a step down
    assert result.faults.tool_choice_fallbacks == len(seen) - 2
    if rung in ("required", "auto"):  # only the forced tool is offered below the object form
        assert [t["function"]["name"] for t in server.requests[-1].body["tools"]] == [
            "submit_action"
        ]
    if rung == "text":
        assert "tools" not in server.requests[-1].body
        assert result.recovered_calls == 1


def test_the_working_rung_is_kept_for_later_calls_and_replayed(tmp_path: Path) -> None:
    cache_file = tmp_path / "cache.sqlite"
    with LoopbackServer(quirks=["choice_rejected"]) as server:
        model = _model(server, ResponseCache(cache_file))
        first = _loop(model)
        n = server.count()
        second = asyncio.run(
            run_tool_loop(model, system="Decide.", user="Again.", tools=[PRICE], submit=SUBMIT)
        )
        later = _choices(server, n)
    assert first.faults.tool_choice_fallbacks == 3  # research's `auto`, then two forced forms
    assert second.faults.tool_choice_fallbacks == 0 and later == [ABSENT, ABSENT]
    assert [c.tool_choice_rung for c in second.model_calls if c.phase == "submit"] == ["auto"]
    with LoopbackServer() as elsewhere:  # replay: no endpoint is asked anything
        replay = _loop(_model(elsewhere, ResponseCache(cache_file, mode="replay")))
        assert elsewhere.count() == 0
    assert replay.model_calls == [
        c.model_copy(update={"faults": c.faults.model_copy(update={"tool_choice_fallbacks": 0})})
        for c in first.model_calls
    ]
    assert replay.action == first.action


def test_a_pinned_form_is_sent_alone_and_its_rejection_is_an_error() -> None:
    with LoopbackServer(quirks=["choice_rejected"]) as server:
        with pytest.raises(ProviderError, match="tool_choice"):
            _loop(_model(server, forced_choice="required"))
        assert _choices(server) == ["auto", ABSENT, "required"]
    with LoopbackServer(quirks=["choice_rejected"]) as server:
        result = _loop(_model(server, forced_choice="text"))
        assert result.faults.tool_choice_fallbacks == 1  # research's `auto` only
        assert _choices(server) == ["auto", ABSENT, ABSENT]
        assert result.action == Action(orders=[], reason="x")


def test_reasoning_is_kept_in_the_trace_never_read_and_its_tokens_counted() -> None:
    with LoopbackServer(quirks=["reasoning", "cached_usage"]) as server:
        result = _loop(_model(server))
        bodies = [json.dumps(r.body) for r in server.requests]
    # the reasoning holds a valid decoy `<tool_call>` with orders ["decoy"]: never read
    assert result.action == Action(orders=[], reason="x")
    assert result.recovered_calls == 0
    assert all("decoy" not in c.raw_arguments for c in result.tool_calls)
    assert all(c.reasoning == REASONING_TEXT for c in result.model_calls)
    assert all("decoy" not in m.content for m in result.messages)
    assert all(REASONING_TEXT not in b for b in bodies)  # never sent back to the endpoint
    calls = len(result.model_calls)
    assert result.usage.reasoning_tokens == calls * (len(REASONING_TEXT) // 4)
    for call in result.model_calls:  # the personality reports 1/8 of the request as cached
        assert 0 < call.usage.cached_input_tokens <= call.usage.input_tokens // 2 + 1
    assert result.usage.cached_input_tokens == sum(
        c.usage.cached_input_tokens for c in result.model_calls
    )


def test_usage_sums_every_token_kind() -> None:
    a = Usage(input_tokens=10, output_tokens=5, cached_input_tokens=4, reasoning_tokens=2)
    b = Usage(input_tokens=1, output_tokens=1, cached_input_tokens=1, reasoning_tokens=1)
    assert a + b == Usage(
        input_tokens=11, output_tokens=6, cached_input_tokens=5, reasoning_tokens=3
    )


def test_a_portfolio_run_counts_the_ladder_steps_in_its_steps_panel_and_summary(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """A short portfolio run against an endpoint that rejects any `tool_choice` (DeepSeek's
    thinking models): every step submits, and the two steps down (the object form, then
    `required`; `memory_only` has no research call) are on the first step, in the episode's
    panel and in the summary."""
    with LoopbackServer(quirks=["choice_rejected"]) as server:
        spec = spec_dict(synth_dataset_dir, server.openai_url, ["blinded"], ["memory_only"])
        spec["agents"] = spec["agents"][:1]
        spec["windows"] = [{"start": "2024-02-01", "end": "2024-02-07"}]  # synth ends 02-09
        summary = pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path)))
        rejected = sum(r.reply == "error" for r in server.requests)
    folder = next((tmp_path / "episodes").glob("scripted_*"))
    steps = pd.read_parquet(folder / "steps.parquet")
    assert rejected == 2 and len(steps) >= 3
    assert list(steps["tool_choice_fallbacks"]) == [2] + [0] * (len(steps) - 1)
    assert not steps["fallback"].any()  # every step's submission was accepted
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["tool_choice_fallbacks"] == 2
    assert summary.loc[summary["kind"] == "llm", "tool_choice_fallbacks"].tolist() == [2]
    rungs = [
        [c["tool_choice_rung"] for c in t["model_calls"] if c["phase"] == "submit"]
        for t in trace_lines(folder)
    ]
    assert rungs == [["auto"]] * len(steps)


def test_cached_and_reasoning_tokens_are_priced_as_the_dated_table_prices_them() -> None:
    """The oracle is genai-prices itself: its price of the same usage on the same day."""
    import genai_prices

    config = ModelConfig(provider="openai", model="gpt-4.1-mini")
    day = date(2025, 6, 1)
    quote = quote_price(config, {}, on=day)
    assert quote.price is not None and quote.price.cache_read_per_mtok is not None
    usage = Usage(
        input_tokens=1_000_000, output_tokens=200_000, cached_input_tokens=600_000,
        reasoning_tokens=150_000,
    )  # fmt: skip
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=1_000_000, cache_read_tokens=600_000, output_tokens=200_000
        ),
        "gpt-4.1-mini",
        provider_id="openai",
        genai_request_timestamp=datetime.combine(day, time(12), tzinfo=UTC),
    ).total_price
    assert quote.price.request_cost(usage) == pytest.approx(float(expected))
    assert quote.price.cost(usage) == pytest.approx(float(expected))
    uncached = usage.model_copy(update={"cached_input_tokens": 0})
    assert quote.price.cost(uncached) > quote.price.cost(usage)  # the cache discount is real
    assert "cached in" in quote.describe()
    unknown = quote_price(ModelConfig(provider="openai", model="no-such-model-xyz"), {}, on=day)
    assert unknown.price is None and "price unknown" in unknown.describe()


def test_anthropic_thinking_blocks_are_kept_apart_and_cache_reads_counted() -> None:
    with LoopbackServer(quirks=["reasoning", "cached_usage"]) as server:
        config = ModelConfig(
            provider="anthropic", model="quirky", base_url=server.anthropic_url, max_tokens=200
        )
        result = _loop(get_model(config, retry=FAST))
        bodies = [json.dumps(r.body) for r in server.requests]
    assert result.action == Action(orders=[], reason="x")
    assert all(c.reasoning == REASONING_TEXT for c in result.model_calls)
    assert all(REASONING_TEXT not in b for b in bodies)
    for call in result.model_calls:  # the API leaves cache reads out of its input_tokens
        usage = call.usage
        assert usage.cached_input_tokens > 0
        assert usage.input_tokens - 2 * usage.cached_input_tokens in (0, 1)


def test_concurrent_loops_step_down_together_and_never_back_up() -> None:
    """Eight loops at once on one adapter meet the refusals together; each submits in the
    form that works, and the adapter's rung ends at `auto`, so later loops send only it."""

    async def batch(model: ChatModel, n: int) -> list[LoopResult]:
        return list(
            await asyncio.gather(
                *(
                    run_tool_loop(model, system="Decide.", user=f"Go {i}.", tools=[PRICE],
                                  submit=SUBMIT)
                    for i in range(n)
                )
            )
        )  # fmt: skip

    with LoopbackServer(quirks=["none_auto_only"], latency_s=0.02) as server:
        model = _model(server)

        async def both() -> tuple[list[LoopResult], list[LoopResult]]:
            return await batch(model, 8), await batch(model, 3)

        first, later = asyncio.run(both())
    for result in [*first, *later]:
        assert result.action == Action(orders=[], reason="x")
        assert [c.tool_choice_rung for c in result.model_calls if c.phase == "submit"] == ["auto"]
    # the first forced call to arrive starts at `object` and takes both steps itself
    assert max(r.faults.tool_choice_fallbacks for r in first) == 2
    assert [r.faults.tool_choice_fallbacks for r in later] == [0, 0, 0]


def test_ping_says_which_form_the_forced_call_went_in() -> None:
    from typer.testing import CliRunner

    from tradebench.cli.llm import app

    with LoopbackServer(quirks=["object_choice_rejected"]) as server:
        args = ["ping", "openai:lmstudio-like", "--base-url", server.openai_url]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "valid tool call: yes" in result.output
    assert "forced as: required (after 1 refused or ignored forms)" in result.output
