"""Rate limits under load: concurrent episodes against an endpoint that answers HTTP 429
above a request rate, through one `ModelPool` with the same requests-per-minute limit.

The loopback server answers at once and refuses (429 with Retry-After) any request above
`--rpm` in its sliding window. Each episode sends one request after another until the time
is up. Prints the requests the server received in each whole minute window from the first
one, the 429s it sent and the throughput. With the pool's limit no minute holds more than
`--rpm` requests and the throughput stays within 10% of it; `--no-client-limit` leaves the
pool without limits, so the server's 429s and Retry-After pace it (adaptive concurrency).

`--scale K` runs K times faster: a "minute" lasts 60/K seconds on both sides (the limits
per window are unchanged), e.g. `--scale 10 --minutes 10` takes one minute of wall time.

`--grid` runs real episodes instead: a portfolio grid of `--episodes` model episodes (one
per seed, memory-only, blinded) on the embedded synthetic market through `run_spec`, the
spec's agent carrying `limits: {rpm}` (real time only: a spec's minute is 60 s). Every
request then is a step's model call with its prompt, parse and journal, as in a run.

    python perf/rate_limit.py --rpm 60 --episodes 32 --minutes 3
    python perf/rate_limit.py --scale 10 --minutes 10
    python perf/rate_limit.py --grid --episodes 32 --minutes 3
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path

import pandas as pd

from tradebench.benchmarks import run_spec
from tradebench.data.synth import SynthConfig, synthesize
from tradebench.llm.limits import Limits
from tradebench.llm.loopback import LoopbackServer, RateLimit
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import Message, ModelConfig
from tradebench.runs.models import ModelPool
from tradebench.runs.spec import RunSpec


async def _episodes(pool: ModelPool, config: ModelConfig, n: int, seconds: float) -> int:
    """`n` episodes sending requests one after another for `seconds`; replies received."""
    model = pool.model(config)
    replies = 0

    async def episode(index: int) -> None:
        nonlocal replies
        step = 0
        while True:
            ask = [Message(role="user", content=f"episode {index} step {step}: say ok")]
            await model.generate(ask)
            replies += 1
            step += 1

    tasks = [asyncio.create_task(episode(i)) for i in range(n)]
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return replies


def _grid(url: str, episodes: int, rpm: int, folder: Path) -> pd.DataFrame:
    """A portfolio grid of `episodes` memory-only model episodes (one per seed) against
    `url` with the agent's `limits: {rpm}`; its summary's model rows."""
    data = folder / "synth"
    synthesize(data, SynthConfig(seed=0))
    spec = {
        "benchmark": "portfolio",
        "dataset": str(data),
        "windows": [{"start": "2024-01-29", "end": "2024-02-06"}],
        "modes": ["memory_only"],
        "masks": ["blinded"],
        "seeds": list(range(episodes)),
        "agents": [
            {
                "name": "limited",
                "model": {"provider": "openai", "model": "rate-probe", "base_url": url},
                "limits": {"rpm": rpm},
                "max_attempts": 1000,
            }
        ],
        "concurrency": episodes,
        "cache": {"mode": "off"},
    }
    summary = asyncio.run(run_spec(RunSpec.model_validate(spec), folder / "run"))
    frame = pd.read_parquet(summary)
    return frame[frame["kind"] == "llm"]


def per_window(times: list[float], window_s: float, windows: int) -> list[int]:
    """Requests in each whole window from the first request's arrival."""
    if not times:
        return [0] * windows
    start = min(times)
    counts = [0] * windows
    for t in times:
        k = int((t - start) // window_s)
        if k < windows:
            counts[k] += 1
    return counts


def main(argv: list[str] | None = None) -> None:
    """Run the measurement and print one line per minute window."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rpm", type=int, default=60, help="requests per minute (both sides)")
    parser.add_argument("--episodes", type=int, default=32, help="concurrent episodes")
    parser.add_argument("--minutes", type=int, default=3, help="minute windows measured")
    parser.add_argument("--scale", type=float, default=1.0, help="time compression factor")
    parser.add_argument(
        "--no-client-limit", action="store_true", help="pace by the server's 429s alone"
    )
    parser.add_argument("--grid", action="store_true", help="real portfolio episodes")
    args = parser.parse_args(argv)
    logging.getLogger("tradebench").setLevel(logging.ERROR)  # each 429 is counted below
    if args.grid:
        grid_main(args.rpm, args.episodes, args.minutes)
        return
    window = 60.0 / args.scale
    limit = RateLimit(requests=args.rpm, window_s=window, retry_after=True)
    with LoopbackServer(rate_limit=limit) as server:
        config = ModelConfig(
            provider="openai", model="rate-probe", base_url=server.openai_url, max_tokens=16
        )
        limits = (
            None if args.no_client_limit else Limits(requests_per_minute=args.rpm, window_s=window)
        )
        pool = ModelPool(
            concurrency=args.episodes,
            cache_mode="off",
            limits=limits,
            retry=RetryPolicy(max_attempts=1000, base_delay_s=0.05 * window / 60, jitter=0.25),
        )
        # the run lasts the measured windows plus a little, so the last window is whole
        seconds = window * args.minutes + min(window * 0.1, 5.0)
        begun = time.perf_counter()
        replies = asyncio.run(_episodes(pool, config, args.episodes, seconds))
        wall = time.perf_counter() - begun
        states = pool.limiter_states()
        pool.close()
        counts = per_window(server.arrivals, window, args.minutes)
        let_through = per_window(server.accepted, window, args.minutes)
    label = "client limit" if limits is not None else "server 429s only"
    print(
        f"{args.episodes} episodes, limit {args.rpm}/min ({label}), a minute = {window:g} s, "
        f"{wall:.1f} s wall"
    )
    for k, (n, ok) in enumerate(zip(counts, let_through, strict=True)):
        print(f"minute {k + 1}: {n} requests ({ok} answered, {n - ok} refused with 429)")
    mean = sum(counts) / len(counts)
    print(
        f"max {max(counts)} per minute (limit {args.rpm}); mean {mean:.1f}/min = "
        f"{mean / args.rpm:.1%} of the limit; 429s sent {server.limited}; replies {replies}"
    )
    for name, state in states.items():
        print(f"limiter {name}: {state.describe()}")


def grid_main(rpm: int, episodes: int, minutes: int) -> None:
    """Run the grid, then print the requests per whole minute while every episode ran."""
    limit = RateLimit(requests=rpm, window_s=60.0, retry_after=True)
    with LoopbackServer(rate_limit=limit) as server, tempfile.TemporaryDirectory() as tmp:
        begun = time.perf_counter()
        llm = _grid(server.openai_url, episodes, rpm, Path(tmp))
        wall = time.perf_counter() - begun
        arrivals = sorted(server.arrivals)
    whole = min(minutes, int((arrivals[-1] - arrivals[0]) // 60))
    counts = per_window(arrivals, 60.0, whole)
    done = int((llm["status"] == "done").sum())
    print(
        f"grid: {len(llm)} episodes ({done} done), {len(arrivals)} requests, limit {rpm}/min, "
        f"{wall:.1f} s wall, 429s sent {server.limited}"
    )
    for k, n in enumerate(counts):
        print(f"minute {k + 1}: {n} requests")
    if counts:
        mean = sum(counts) / len(counts)
        print(f"max {max(counts)} per minute; mean {mean:.1f}/min = {mean / rpm:.1%} of the limit")


if __name__ == "__main__":
    main()
