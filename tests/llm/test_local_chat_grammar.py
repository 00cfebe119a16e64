"""The bundled server's grammars, checked with llama.cpp's own grammar sampler on the
bundled model's vocabulary (no weights, no server): what a model sampling under them could
write and what it could not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.benchmarks.portfolio.grammar import NativeGrammar
from tests.llm.bundled import bundled_or_skip
from tradebench.llm.local_chat import auto_grammar, forced_grammar

PRICE = {
    "type": "function",
    "function": {
        "name": "get_price",
        "description": "Last close of one asset.",
        "parameters": {
            "type": "object",
            "properties": {"stock_id": {"enum": ["asset_0001", "asset_0002"]}},
            "required": ["stock_id"],
            "additionalProperties": False,
        },
    },
}
WEIGHT = {
    "type": "function",
    "function": {
        "name": "set_weight",
        "description": "Set a weight.",
        "parameters": {
            "type": "object",
            "properties": {"weight": {"type": "number", "minimum": 0, "maximum": 1}},
            "required": ["weight"],
            "additionalProperties": False,
        },
    },
}
CALL = '<tool_call>{"name": "get_price", "arguments": {"stock_id": "asset_0001"}}</tool_call>'


@pytest.fixture(scope="module")
def native() -> Iterator[NativeGrammar]:
    grammar = NativeGrammar(bundled_or_skip("smollm2").path)
    yield grammar
    grammar.close()


def test_auto_admits_a_call_or_an_answer_and_required_only_a_call(native) -> None:
    auto, required = auto_grammar([PRICE]), auto_grammar([PRICE], allow_answer=False)
    assert native.parses(auto) and native.parses(required)
    assert native.accepts(auto, CALL) and native.accepts(auto, "message: no call needed")
    assert native.accepts(required, CALL)
    assert not native.accepts(required, "message: no call needed")
    bad_id = CALL.replace("asset_0001", "asset_9999")  # not in the schema's enum
    assert not native.accepts(auto, bad_id) and not native.accepts(auto, "plain text")


def test_a_unit_bounded_number_cannot_leave_the_unit_interval(native) -> None:
    grammar = forced_grammar(WEIGHT)
    assert native.parses(grammar)
    for ok in ("0", "0.59", "1", "1.0", "0.0001"):
        assert native.accepts(grammar, f'{{"weight": {ok}}}'), ok
    for bad in ("5.9", "59", "1.5", "-0.1", "1025.98", "0.00001"):
        assert not native.accepts(grammar, f'{{"weight": {bad}}}'), bad
