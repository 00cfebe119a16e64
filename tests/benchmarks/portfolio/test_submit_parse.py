"""A submission's first check takes what the plain check takes, and refuses in its words.

`tools._parsed` accepts at once what `SubmitAction`'s strict rules take and sends anything
else through the schema. The oracle is the plain check written out again: the JSON Schema's
issues first, then the model parsed. Both see the same JSON-shaped submissions, valid ones
and ones broken in every way a model's reply can break them.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from tradebench.agents.tools import ArgumentError, parse_model, schema_issues
from tradebench.benchmarks.portfolio.tools import ACCEPTED, SubmitAction, _parsed

VALID_ORDER = {
    "stock_id": "asset_0001",
    "side": "BUY",
    "shares": 100,
    "confidence": 0.5,
    "reason": "a reason of enough length",
}
ODD_VALUES: list[Any] = [
    None, True, False, 0, 1, 2.0, 0.5, -3, 1e400, float("nan"), "0.5", "100", "", "BUY",
    "buy", "x" * 9, "x" * 10, "x" * 300, "x" * 301, [], {}, [1], {"a": 1}, 10**20,
]  # fmt: skip
"""Values a reply may put anywhere: wrong types, numbers as text, edges of each bound."""


def plain(arguments: dict[str, Any]) -> SubmitAction:
    """The check as first written: the schema's issues, then the model's own parse."""
    issues = schema_issues(ACCEPTED, arguments)
    if issues:
        raise ArgumentError("submission does not match the submit_action schema", issues)
    return parse_model(SubmitAction, arguments)


def outcome(check: Any, arguments: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", check(arguments).model_dump()
    except ArgumentError as exc:
        return "refused", (str(exc), exc.issues)


def submissions(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Valid submissions, and each one broken in one to three places."""
    out = []
    for _ in range(n):
        orders = [dict(VALID_ORDER) for _ in range(rng.randint(0, 3))]
        for o in orders:
            if rng.random() < 0.5:
                del o["shares"]
                o["target_weight"] = rng.choice([0.1, 1, 0])
        args: dict[str, Any] = {"orders": orders, "overall_reason": "why these orders, today"}
        broken = copy.deepcopy(args)
        for _ in range(rng.randint(1, 3)):
            orders = broken.get("orders")
            dicts = [o for o in orders if isinstance(o, dict)] if isinstance(orders, list) else []
            target = rng.choice([broken, *dicts])
            key = rng.choice([*target, "extra", "orders", "side", "confidence"])
            if rng.random() < 0.2:
                target.pop(key, None)
            else:
                target[key] = rng.choice(ODD_VALUES)
        out += [args, broken]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_first_check_takes_and_refuses_as_the_plain_check(seed: int) -> None:
    kinds = set()
    for arguments in submissions(random.Random(seed), 150):
        got = outcome(_parsed, copy.deepcopy(arguments))
        assert got == outcome(plain, arguments), arguments
        kinds.add(got[0])
    assert kinds == {"ok", "refused"}  # both paths were exercised
