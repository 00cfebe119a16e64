"""End to end against a real model server: llama-cpp-python serving a bundled tiny GGUF.

Asserts the plumbing, not the model's wisdom: requests are accepted by a real server (no
HTTP error, one attempt each), every reply is a valid tool call or a counted failure, the
loop ends with a submission or the fallback, and the run replays exactly from the cache.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from tests.llm.bundled import bundled_or_skip
from tradebench.agents.tool_loop import LoopConfig, run_tool_loop
from tradebench.agents.tools import SubmitTool, Tool
from tradebench.cli import app
from tradebench.errors import ConfigError, ToolError
from tradebench.llm.base import get_model
from tradebench.llm.cache import ResponseCache
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.llm.ping import ping_model
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import Message, ModelConfig, ToolSpec

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]
ONE_SHOT = RetryPolicy(max_attempts=1, timeout_s=900)  # any HTTP error fails the test; the
# timeout is a safety net for a hung server, not a speed bound
TEST_THREADS = 1
"""Threads of every test server: with `-n 2` the other worker keeps one core busy, and
llama.cpp's threads spin at each barrier, so a 2-thread server on a shared 2-core machine
runs several times slower than a 1-thread one."""


class Decision(BaseModel):
    side: Literal["BUY", "SELL", "HOLD"]
    reason: str = Field(max_length=40)  # bounded: grammar-forced output fits max_tokens


@pytest.fixture(scope="module")
def local_server() -> Iterator[LocalServer]:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        bundled = find_bundled_model()
    except ConfigError as exc:
        pytest.skip(str(exc))
    with LocalServer(bundled, n_ctx=2048, n_threads=TEST_THREADS) as server:
        yield server


def _config(server: LocalServer) -> ModelConfig:
    return ModelConfig(
        provider="openai",
        model=server.alias,
        base_url=server.base_url,
        max_tokens=96,
        temperature=0.0,
    )


def test_ping_gets_a_valid_forced_tool_call(local_server):
    result = asyncio.run(ping_model(_config(local_server), ONE_SHOT))
    assert result.valid, result.error
    assert result.attempts == 1 and result.usage.output_tokens > 0


def test_tool_loop_end_to_end_and_replay(local_server, tmp_path):
    rejected: list[dict[str, Any]] = []

    def first_attempt_rejected(decision: Decision) -> Decision:
        # deterministic constraint failure, to send a retry with feedback to a real server
        if not rejected:
            rejected.append(decision.model_dump())
            raise ToolError("state a different reason than before")
        return decision

    price = Tool(
        spec=ToolSpec(
            name="get_price",
            description="Last close price of a stock symbol.",
            parameters={
                "type": "object",
                "required": ["symbol"],
                "additionalProperties": False,
                "properties": {"symbol": {"type": "string", "maxLength": 6}},
            },
        ),
        fn=lambda args: {"symbol": args["symbol"], "close": 101.5},
    )
    submit = SubmitTool.from_model(
        "submit", "Submit the decision.", Decision, check=first_attempt_rejected
    )
    config = LoopConfig(max_tool_calls=2, max_submit_retries=2)
    path = tmp_path / "cache.sqlite"

    def run(mode: str):
        model = get_model(
            _config(local_server), cache=ResponseCache(path, mode=mode), retry=ONE_SHOT
        )
        coro = run_tool_loop(
            model,
            system="You are a stock trader. Use the tools.",
            user="Check the price of ACME, then decide BUY, SELL or HOLD.",
            tools=[price],
            submit=submit,
            config=config,
        )
        return asyncio.run(coro)

    result = run("readwrite")
    assert result.stop_reason in ("submitted", "fallback")
    assert result.fallback == (result.action is None)
    assert rejected, "the first submission never arrived"
    assert result.submission_attempts >= 2 and result.retries >= 1
    for call in result.model_calls:
        if call.phase == "submit":  # forced: a tool call, or a counted parse failure
            assert call.tool_calls >= 1 or call.parse_error is not None
    assert result.parse_failures == sum(c.parse_error is not None for c in result.model_calls)
    for record in result.tool_calls:
        assert record.valid or record.error_kind is not None
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0

    rejected.clear()
    replayed = run("replay")
    assert replayed.model_dump_json() == result.model_dump_json()


RESEARCH = ToolSpec(
    name="get_price",
    description="Last close of one asset.",
    parameters={
        "type": "object",
        "required": ["stock_id"],
        "additionalProperties": False,
        "properties": {"stock_id": {"enum": ["asset_0001", "asset_0002"]}},
    },
)


def test_the_bundled_server_carries_tools_to_the_model(local_server):
    """The probe finds tools and the system turn in the prompt, and under `auto` the model
    itself chooses to call the research tool (temperature 0: the same choice every run)."""
    model = get_model(_config(local_server), retry=ONE_SHOT)
    messages = [
        Message(role="system", content="You are a stock trader. Research with the tools."),
        Message(role="user", content="Check the price of asset_0001 before you decide."),
    ]
    reply = asyncio.run(model.generate(messages, [RESEARCH], "auto"))
    assert model.support is not None and model.support.probed
    assert model.support.tools and model.support.system
    assert model.text_protocol_replies == 0
    [call] = reply.message.tool_calls
    assert call.name == "get_price" and call.arguments["stock_id"] in ("asset_0001", "asset_0002")


def test_a_plain_llama_server_is_found_to_drop_tools(tmp_path):
    """Served by `llama_cpp.server` as it comes, SmolLM2's template drops the tools: the
    adapter's probe sees it and moves the tools into the prompt."""
    bundled = bundled_or_skip("smollm2")
    with LocalServer(bundled, n_ctx=2048, n_threads=TEST_THREADS, tool_aware=False) as server:
        model = get_model(_config(server), retry=ONE_SHOT)
        messages = [Message(role="user", content="Check the price of asset_0001.")]
        asyncio.run(model.generate(messages, [RESEARCH], "auto"))
    assert model.support is not None and not model.support.tools
    assert model.text_protocol_replies == 1


def test_a_model_file_that_cannot_load_fails_in_one_line(tmp_path):
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file")
    log = tmp_path / "server.log"
    result = CliRunner().invoke(
        app, ["llm", "serve-local", "--model", str(bad), "--port", "0", "--log", str(log)]
    )
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: local model server exited while starting")
    assert "Failed to load model" in line and str(log) in line and "Traceback" not in line
    assert "Failed to load model" in log.read_text()


@pytest.mark.parametrize("tool_aware", [True, False])
def test_gemma_keeps_tools_and_system_only_through_the_tool_aware_server(tool_aware):
    """llama.cpp's `gemma` format drops the system turn and the tools; served through the
    tool-aware handler (system folded into the user turn) both reach the prompt."""
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        bundled = find_bundled_model("gemma")
    except ConfigError as exc:
        pytest.skip(f"{exc} (extra: pip install '.[local-gemma]')")
    with LocalServer(bundled, n_ctx=2048, n_threads=TEST_THREADS, tool_aware=tool_aware) as server:
        model = get_model(_config(server), retry=ONE_SHOT)
        messages = [
            Message(role="system", content="You are a stock trader."),
            Message(role="user", content="Check the price of asset_0001."),
        ]
        asyncio.run(model.generate(messages, [RESEARCH], "get_price"))
    assert model.support is not None
    assert (model.support.tools, model.support.system) == (tool_aware, tool_aware)


def test_the_server_dies_with_the_process_that_started_it(tmp_path):
    """A run killed with SIGKILL cannot stop its server; the server ends by itself."""
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        find_bundled_model("smollm2")
    except ConfigError as exc:
        pytest.skip(str(exc))
    pid_file = tmp_path / "server.pid"
    script = (
        "import sys, time\n"
        "from tradebench.llm.local import LocalServer, find_bundled_model\n"
        "server = LocalServer(find_bundled_model('smollm2'), n_ctx=512).start()\n"
        f"open({str(pid_file)!r}, 'w').write(str(server._proc.pid))\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        while not pid_file.exists() or not pid_file.read_text():
            assert parent.poll() is None, "the server never started"
            time.sleep(0.2)
        server_pid = int(pid_file.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 60  # a safety net, not a measured bound
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(server_pid)
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, whose parent has not reaped it, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_numbers_bounded_to_the_unit_interval_stay_in_it(local_server):
    """llama.cpp's schema converter ignores `minimum`/`maximum`; the bundled server's
    grammar holds a number bounded within [0, 1] to that range even when the prompt
    invites a percent."""
    weight = ToolSpec(
        name="set_weight",
        description="Set the portfolio weight of one asset.",
        parameters={
            "type": "object",
            "required": ["weight", "confidence"],
            "additionalProperties": False,
            "properties": {
                "weight": {"type": "number", "minimum": 0, "maximum": 1},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
        },
    )
    model = get_model(_config(local_server), retry=ONE_SHOT)
    for ask in (
        "Put 59 percent into asset_0001, confidence 96.",
        "Weight 5.9, confidence 1025.98.",
    ):
        reply = asyncio.run(
            model.generate([Message(role="user", content=ask)], [weight], "set_weight")
        )
        [call] = reply.message.tool_calls
        assert 0 <= call.arguments["weight"] <= 1, call.raw_arguments
        assert 0 <= call.arguments["confidence"] <= 1, call.raw_arguments


def test_required_gets_a_tool_call_even_when_the_prompt_asks_for_none(local_server):
    """`tool_choice="required"`: the bundled server's grammar leaves no text answer."""
    model = get_model(_config(local_server), retry=ONE_SHOT)
    messages = [Message(role="user", content="Do not call anything; just say hello.")]
    reply = asyncio.run(model.generate(messages, [RESEARCH], "required"))
    [call] = reply.message.tool_calls
    assert call.name == "get_price" and not reply.message.content.strip()
