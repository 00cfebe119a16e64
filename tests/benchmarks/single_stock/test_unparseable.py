"""Unusable replies become an invalid hold; format nudges are bounded and counted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.single_stock.conftest import make_episode, task
from tradebench.benchmarks.single_stock.decision import UnreadableReply, parse_reply_text
from tradebench.benchmarks.single_stock.llm_agent import SingleStockLLMAgent
from tradebench.llm.base import get_model
from tradebench.llm.loopback import LoopbackServer, Reply
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig

GOOD = {"action": "sell", "reason": "fade the move", "confidence": 0.7}
SUBMIT = "submit_decision"


def _play(dataset: Path, script: list[Reply], nudges: int, steps: int):
    """Run `steps` decisions of a TSLA episode against the scripted loopback server."""
    with LoopbackServer(script) as server:
        cfg = ModelConfig(provider="openai", model="m", base_url=server.openai_url, max_tokens=64)
        agent = SingleStockLLMAgent(get_model(cfg, retry=RetryPolicy(max_attempts=1)), nudges)
        episode = make_episode(dataset, task("TSLA", "2021-01-04", "2021-06-30"), steps)

        async def go() -> None:
            while not episode.done:
                episode.apply(await agent.decide(episode.context()))

        asyncio.run(go())
        return episode.series(), list(server.requests)


def test_nudges_recover_or_fall_back_to_an_invalid_hold(ss_dataset_dir: Path) -> None:
    script = [
        Reply.garbage(),  # step 0: unreadable, nudged, then valid
        Reply.tool(SUBMIT, GOOD),
        Reply.empty(),  # step 1: empty twice -> invalid hold
        Reply.empty(),
        Reply.tool(SUBMIT, {"action": "moon", "reason": "x", "confidence": 2}),  # step 2
        Reply.say("I would buy here"),  # text but no call -> invalid hold
        Reply.tool(SUBMIT, {**GOOD, "action": "buy"}),  # step 3: valid first time
    ]
    series, requests = _play(ss_dataset_dir, script, nudges=1, steps=4)
    assert len(requests) == 7
    assert series["action"].tolist() == ["sell", "hold", "hold", "buy"]
    assert series["valid"].tolist() == [True, False, False, True]
    assert series["position"].tolist() == [-1, -1, -1, 1]  # an invalid hold keeps the short
    assert series["attempts"].tolist() == [2, 2, 2, 1]
    assert series["nudges"].tolist() == [1, 1, 1, 0]
    assert series["parse_failures"].tolist() == [1, 2, 0, 0]
    assert series["empty_replies"].tolist() == [0, 2, 0, 0]
    sent = series["sent"]
    assert sent[0] == "sell" and pd.isna(sent[1]) and sent[2] == "moon"  # as sent, unread
    # the nudge carried structured feedback to the model
    last = requests[5].body["messages"][-1]["content"]
    assert "rejected" in last and "action" in last


def test_zero_nudges_means_one_reply_per_day(ss_dataset_dir: Path) -> None:
    series, requests = _play(ss_dataset_dir, [Reply.garbage(), Reply.tool(SUBMIT, GOOD)], 0, 2)
    assert len(requests) == 2
    assert series["valid"].tolist() == [False, True]
    assert series["nudges"].tolist() == [0, 0]


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ('{"action": "buy", "reason": "r", "confidence": 0.5}', "buy"),
        ('```json\n{"action": "sell", "reason": "r", "confidence": 1}\n```', "sell"),
        ('I think: {"action": "hold", "reason": "wait", "confidence": 0.1} ok', "hold"),
    ],
)
def test_text_replies_parse(text: str, action: str) -> None:
    assert parse_reply_text(text).action == action


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("buy", "no JSON"),
        ('{"action": "buy", "reason": "r"', "no JSON"),
        ('{"action": "buy" "reason": "r", "confidence": 0.5}', "invalid JSON"),
        ('{"action": "BUY", "reason": "r", "confidence": 0.5}', "not a valid decision"),
        ('{"action": "buy", "reason": "r", "confidence": 1.5}', "not a valid decision"),
        ("[1, 2]", "no JSON"),
    ],
)
def test_unreadable_text_replies_say_why(text: str, why: str) -> None:
    with pytest.raises(UnreadableReply, match=why):
        parse_reply_text(text)
