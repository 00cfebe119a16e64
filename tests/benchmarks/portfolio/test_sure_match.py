"""The research tools' quick argument look never takes what the schema refuses.

`sure_match.surely_matches` lets sure matches skip the full validator. The oracle is the
full validator itself (`jsonschema` through `Tool.check`): on valid calls and on calls
broken in every way a reply can break them, a research tool answers exactly as a plain
`Tool` over the same schema (no error, or the same message and issues).
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from tradebench.agents.tools import ArgumentError, Tool
from tradebench.benchmarks.portfolio.sure_match import surely_matches
from tradebench.benchmarks.portfolio.tools import RESEARCH_SPECS, RESEARCH_TOOLS

VALID: dict[str, list[dict[str, Any]]] = {
    "get_market_context": [{}],
    "get_portfolio_state": [{}],
    "screen_candidates": [
        {"feature": "ret_20d"},
        {"feature": "vol_20d", "top_k": 30, "ascending": True, "board": "chinext"},
        {"feature": "rsi_14", "top_k": 1, "ascending": False},
    ],
    "get_stock_snapshot": [{"stock_id": "asset_0001"}, {"stock_id": "x" * 24, "lookback": 30}],
    "compare_candidates": [{"stock_ids": ["asset_0001", "asset_0002"]}, {"stock_ids": ["a"] * 10}],
    "risk_check": [
        {"orders": []},
        {
            "orders": [
                {"stock_id": "asset_0001", "side": "SELL", "shares": 100},
                {"stock_id": "asset_0002", "side": "BUY", "target_weight": 0.5},
                {"stock_id": "asset_0003", "side": "BUY", "target_weight": 1},
            ]
        },
    ],
}
ODD: list[Any] = [
    None, True, False, 0, 1, 30, 31, -1, 0.5, 1.0, 2.0, 10.0, float("nan"), float("inf"),
    "", "1", "BUY", "buy", "ret_20d", "chinext", "x" * 25, [], ["a"], ["a"] * 11, {}, {"a": 1},
]  # fmt: skip
"""Values a reply may put anywhere: wrong types, numbers as text, each bound and past it."""


def broken(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """`args` changed in one to three places, at any depth."""
    out = copy.deepcopy(args)
    for _ in range(rng.randint(1, 3)):
        places: list[Any] = [out]
        for value in out.values():
            if isinstance(value, list):
                places += [v for v in value if isinstance(v, dict)]
        target = rng.choice(places)
        key = rng.choice([*target, "extra", "stock_id", "orders", "top_k", "side", "shares"])
        if rng.random() < 0.2:
            target.pop(key, None)
        elif isinstance(target.get(key), list) and rng.random() < 0.5:
            target[key] = [*target[key], rng.choice(ODD)]
        else:
            target[key] = rng.choice(ODD)
    return out


def outcome(tool: Tool, arguments: dict[str, Any]) -> tuple[str, Any]:
    try:
        tool.check(arguments)
    except ArgumentError as exc:
        return "refused", (str(exc), exc.issues)
    return "ok", None


@pytest.mark.parametrize("name", sorted(RESEARCH_SPECS))
def test_research_tool_checks_as_the_full_validator(name: str) -> None:
    plain = Tool(spec=RESEARCH_SPECS[name], fn=dict)
    rng = random.Random(name)
    calls = [*VALID[name], *(broken(rng, rng.choice(VALID[name])) for _ in range(400))]
    seen = set()
    for arguments in calls:
        got = outcome(RESEARCH_TOOLS[name], arguments)
        assert got == outcome(plain, arguments), arguments
        seen.add(got[0])
    assert seen == {"ok", "refused"}
    schema = RESEARCH_SPECS[name].parameters
    assert all(surely_matches(schema, a) for a in VALID[name])  # the quick look does answer
