"""Speed of the model layer against the loopback server (a script that prints figures).

1. Harness overhead per model call: a full-stack `generate` (SDK adapter, limiter, budget,
   cache write) minus a bare HTTP POST of the same body with a plain httpx client to the
   same zero-latency server. Target: < 2 ms.
2. Throughput of N concurrent tool loops against the server with injected latency
   (default 32 loops, 200 ms): achieved calls/s versus the ideal (every call costs exactly
   the injected latency). Target: >= 85 % of ideal.

The server runs in a subprocess so its threads do not share this process's GIL.

    python perf/llm_loop.py [--calls 300] [--loops 32] [--latency-ms 200] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

from tradebench.agents.tool_loop import LoopConfig, run_tool_loop
from tradebench.agents.tools import SubmitTool, Tool
from tradebench.llm.base import get_model
from tradebench.llm.budget import Budget, BudgetConfig
from tradebench.llm.cache import ResponseCache
from tradebench.llm.limits import Limits
from tradebench.llm.types import Message, ModelConfig, ToolCall, ToolSpec

RESEARCH_CALLS = 3
PRICE = ToolSpec(
    name="get_price",
    description="Last close of a stock.",
    parameters={"type": "object", "properties": {"symbol": {"type": "string", "maxLength": 8}}},
)
SUBMIT = ToolSpec(
    name="submit",
    description="Submit orders.",
    parameters={
        "type": "object",
        "required": ["reason"],
        "properties": {"reason": {"type": "string", "maxLength": 80}},
    },
)


@contextmanager
def loopback(latency_ms: float):
    """A loopback server subprocess; yields its OpenAI base_url."""
    cmd = [
        sys.executable,
        "-m",
        "tradebench.llm.loopback",
        "--latency-ms",
        str(latency_ms),
        "--research-calls",
        str(RESEARCH_CALLS),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def conversation() -> list[Message]:
    """A realistic mid-loop conversation: a few turns with tool calls and results."""
    msgs = [
        Message(role="system", content="You manage a portfolio. " * 20),
        Message(role="user", content="Observation: " + "AAPL 190.5, MSFT 410.0; " * 40),
    ]
    for i in range(3):
        call = ToolCall(id=f"c{i}", name="get_price", arguments={"symbol": "AAPL"})
        msgs += [
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", content=json.dumps({"close": 190.5 + i}), tool_call_id=f"c{i}"),
        ]
    return msgs


async def time_harness(base_url: str, calls: int, tmp: Path) -> list[float]:
    """Seconds per full-stack generate call (every call a cache miss, then a write)."""
    config = ModelConfig(provider="openai", model="perf", base_url=base_url, max_tokens=256)
    model = get_model(
        config,
        cache=ResponseCache(tmp / "overhead.sqlite"),
        budget=Budget(BudgetConfig(max_tokens=10**12)),
        limits=Limits(max_concurrency=64),
    )
    msgs = conversation()
    await model.generate(msgs, [PRICE, SUBMIT], "auto", sample_index=-1)  # warm up
    out = []
    for i in range(calls):
        start = time.perf_counter()
        await model.generate(msgs, [PRICE, SUBMIT], "auto", sample_index=i)
        out.append(time.perf_counter() - start)
    return out


def raw_body() -> dict:
    """The chat-completions body a full-stack call sends for `conversation()`."""
    from tradebench.llm.openai_provider import wire_message

    return {
        "model": "perf",
        "messages": [wire_message(m) for m in conversation()],
        "temperature": 0.0,
        "max_tokens": 256,
        "tools": [{"type": "function", "function": t.model_dump()} for t in (PRICE, SUBMIT)],
        "tool_choice": "auto",
    }


async def time_raw(base_url: str, calls: int) -> list[float]:
    """Seconds per bare POST of an equivalent body, response parsed as JSON."""
    body = raw_body()
    out = []
    async with httpx.AsyncClient() as client:
        await client.post(f"{base_url}/chat/completions", json=body)
        for _ in range(calls):
            start = time.perf_counter()
            response = await client.post(f"{base_url}/chat/completions", json=body)
            json.loads(response.content)
            out.append(time.perf_counter() - start)
    return out


async def raw_throughput(base_url: str, clients: int, calls_each: int) -> float:
    """Wall seconds for `clients` concurrent bare-HTTP clients doing `calls_each` POSTs."""
    body = raw_body()
    limits = httpx.Limits(max_connections=clients * 2)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        await client.post(f"{base_url}/chat/completions", json=body)

        async def one() -> None:
            for _ in range(calls_each):
                json.loads((await client.post(f"{base_url}/chat/completions", json=body)).content)

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(clients)))
        return time.perf_counter() - start


async def run_loops(base_url: str, loops: int, rounds: int, tmp: Path) -> tuple[int, float]:
    """(model calls made, wall seconds) for `loops` concurrent tool loops, `rounds` each."""
    config = ModelConfig(provider="openai", model="perf", base_url=base_url, max_tokens=256)
    model = get_model(
        config, cache=ResponseCache(tmp / "loops.sqlite"), limits=Limits(max_concurrency=loops)
    )
    tools = [Tool(spec=PRICE, fn=lambda args: {"close": 190.5})]
    submit = SubmitTool(spec=SUBMIT, validate_fn=lambda args: args)

    async def one(index: int) -> int:
        calls = 0
        for r in range(rounds):
            result = await run_tool_loop(
                model,
                system="You trade.",
                user=f"Loop {index} round {r}.",
                tools=tools,
                submit=submit,
                config=LoopConfig(sample_index=index * 1000 + r),
            )
            assert result.stop_reason == "submitted", result.stop_reason
            calls += len(result.model_calls)
        return calls

    await model.generate([Message(role="user", content="warm up")])  # client, connections
    start = time.perf_counter()
    counts = await asyncio.gather(*(one(i) for i in range(loops)))
    return sum(counts), time.perf_counter() - start


def main() -> None:
    """Measure and print both figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--loops", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        with loopback(0.0) as url:
            raw = asyncio.run(time_raw(url, args.calls))
            full = asyncio.run(time_harness(url, args.calls, tmp))
        with loopback(args.latency_ms) as url:
            calls, wall = asyncio.run(run_loops(url, args.loops, args.rounds, tmp))
            per_client = calls // args.loops
            raw_wall = asyncio.run(raw_throughput(url, args.loops, per_client))
    raw_ms, full_ms = statistics.median(raw) * 1e3, statistics.median(full) * 1e3
    overhead = full_ms - raw_ms
    mean_ms = 1e3 * (statistics.mean(full) - statistics.mean(raw))
    print(
        f"overhead per call: {overhead:.2f} ms (median full stack {full_ms:.2f} ms - "
        f"bare HTTP {raw_ms:.2f} ms; mean {mean_ms:.2f} ms) "
        f"target < 2 ms: {'PASS' if overhead < 2 else 'FAIL'}"
    )
    ideal_wall = calls / args.loops * args.latency_ms / 1e3
    ratio, raw_ratio = ideal_wall / wall, ideal_wall / raw_wall
    print(
        f"throughput: {args.loops} concurrent loops x {args.rounds} rounds, {calls} calls in "
        f"{wall:.2f} s = {calls / wall:.1f} calls/s; ideal {calls / ideal_wall:.1f} calls/s "
        f"-> {ratio:.1%} of ideal, target >= 85%: {'PASS' if ratio >= 0.85 else 'FAIL'}"
    )
    print(
        f"  same server, {args.loops} bare HTTP clients x {calls // args.loops} POSTs: "
        f"{raw_wall:.2f} s -> {raw_ratio:.1%} of ideal (the server's own share of the gap)"
    )


if __name__ == "__main__":
    main()
