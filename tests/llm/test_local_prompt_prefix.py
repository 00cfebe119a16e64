"""The bundled server keeps a conversation's prompt prefix across the loop's phases.

llama.cpp evaluates only the tokens after the longest prefix it evaluated last time. The
tool loop asks under `auto` while it researches (the portfolio, single-stock, mandate and
probe loops without the submit tool), then forces the submit tool (now offered), retries
it, then starts the next step with the same system prompt: when every request of a run
renders the same system text, each call reads only its new turns. Here the real handler's
turns go through the bundled model's own chat template (from the GGUF) and its tokenizer;
no weights load. `tests/benchmarks/portfolio/test_local_model.py` reads the same from a
real server's own account of a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm.bundled import bundled_or_skip
from tradebench.llm.local_chat import served_turns

SNAPSHOT, SUBMIT = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"stock_id": {"type": "string"}},
                "required": ["stock_id"],
                "additionalProperties": False,
            },
        },
    }
    for name, description in (
        ("get_stock_snapshot", "Recent bars of one stock."),
        ("submit_action", "Submit today's orders."),
    )
]
RESEARCH, TOOLS = [SNAPSHOT], [SNAPSHOT, SUBMIT]
FORCED = {"type": "function", "function": {"name": "submit_action"}}
SYSTEM = {"role": "system", "content": "You manage a portfolio of anonymised stocks."}


def _step(day: int) -> list[dict[str, Any]]:
    return [SYSTEM, {"role": "user", "content": f"Step {day}: cash 1,000,000; no holdings."}]


def _called(call_id: str, name: str, arguments: str, result: str) -> list[dict[str, Any]]:
    """An assistant turn calling one tool, and the tool's result."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def _researched(day: int) -> list[dict[str, Any]]:
    snapshot = _called(
        "call_1", "get_stock_snapshot", '{"stock_id": "asset_0001"}', json.dumps({"close": 1.02})
    )
    return [
        *_step(day),
        *snapshot,
        {"role": "user", "content": "Now call `submit_action` with your orders."},
    ]


def _retried(day: int) -> list[dict[str, Any]]:
    refused = _called(
        "call_2", "submit_action", '{"stock_id": "asset_9"}', '{"error": "unknown stock_id"}'
    )
    return [*_researched(day), *refused]


@pytest.fixture(scope="module")
def tokens_of() -> Iterator[Any]:
    """Messages -> the prompt's tokens, as the bundled server renders and reads them."""
    model = bundled_or_skip("smollm2")
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llm = llama_cpp.Llama(str(model.path), vocab_only=True, verbose=False)
    template = Jinja2ChatFormatter(
        llm.metadata["tokenizer.chat_template"],
        eos_token=llm.detokenize([llm.token_eos()], special=True).decode(),
        bos_token=llm.detokenize([llm.token_bos()], special=True).decode(),
    )

    def tokens(messages: list[dict[str, Any]], choice: Any, tools: list[Any]) -> list[int]:
        prompt = template(messages=served_turns(messages, tools, choice)).prompt
        return llm.tokenize(prompt.encode(), add_bos=False, special=True)

    yield tokens
    llm.close()


def _shared(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_the_forced_submission_reads_only_its_new_turns(tokens_of) -> None:
    research = tokens_of(_step(1), "auto", RESEARCH)
    submission = tokens_of(_researched(1), FORCED, TOOLS)
    # the whole research prompt, its assistant opening included, is evaluated already
    assert _shared(research, submission) == len(research) < len(submission)


def test_a_retried_submission_reads_only_its_new_turns(tokens_of) -> None:
    first = tokens_of(_researched(1), FORCED, TOOLS)
    retry = tokens_of(_retried(1), FORCED, TOOLS)
    assert _shared(first, retry) == len(first) < len(retry)


def test_research_that_offers_the_submit_tool_reads_its_turns_once_more(tokens_of) -> None:
    """The MCQ loop offers its answer tool during research: the forced answer's catalogue
    lacks it, so that one request reads the conversation after the catalogue again."""
    research = tokens_of(_step(1), "auto", TOOLS)
    submission = tokens_of(_researched(1), FORCED, TOOLS)
    prompt = tokens_of([SYSTEM], "auto", [])
    catalogue = tokens_of([SYSTEM], "auto", RESEARCH)
    # kept: the system prompt and the catalogue up to the answer tool's entry
    assert len(prompt) + 40 < _shared(research, submission) < len(catalogue) < len(research)


@pytest.mark.parametrize(
    ("choice", "tools"), [("auto", RESEARCH), ("required", RESEARCH), (FORCED, TOOLS)]
)
def test_every_request_of_a_run_starts_with_the_same_system_text(tokens_of, choice, tools) -> None:
    first = tokens_of(_step(1), "auto", RESEARCH)
    later = tokens_of(_step(2), choice, tools)
    system = tokens_of([SYSTEM], "auto", RESEARCH)
    # the system turn, catalogue included, is read once for the whole run
    assert _shared(first, later) >= len(system) - 8 > 100
