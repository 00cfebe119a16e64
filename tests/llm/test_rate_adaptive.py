"""Rate limits at the model pool: requests-per-minute windows, concurrency that halves on
HTTP 429 and recovers one step a round, and Retry-After honoured by every request to the
endpoint, not only the refused one.

The server-side oracles are the loopback server's own records (arrival times, 429s sent,
the Retry-After it asked for); the recovery arithmetic is additive increase by one per
`concurrency` clean replies, multiplicative decrease by half, written out here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict
from tradebench.benchmarks import run_spec
from tradebench.llm.limits import Limits, MinuteLimits, RateLimiter
from tradebench.llm.loopback import LoopbackServer, RateLimit
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import Message, ModelConfig
from tradebench.runs.models import ModelPool
from tradebench.runs.progress import RunProgress
from tradebench.runs.spec import RunSpec

RETRY = RetryPolicy(max_attempts=50, base_delay_s=0.02, max_delay_s=2.0, jitter=0.0, timeout_s=5)


def _ask(i: int) -> list[Message]:
    return [Message(role="user", content=f"question {i}")]


async def _burst(pool: ModelPool, config: ModelConfig, n: int, limits=None) -> None:
    model = pool.model(config, limits=limits)
    await asyncio.gather(*(pool.bounded(model.generate, _ask(i)) for i in range(n)))


def _config(server: LoopbackServer) -> ModelConfig:
    return ModelConfig(provider="openai", model="m", base_url=server.openai_url, max_tokens=16)


async def _episodes(pool: ModelPool, config: ModelConfig, n: int, steps: int) -> None:
    """`n` episodes starting 0.2 s apart, each sending `steps` requests one after another,
    50 ms apart: later episodes start while earlier ones wait out a Retry-After."""
    model = pool.model(config)
    await model.generate(_ask(-1))  # the HTTP clients are made before the clock matters

    async def episode(e: int) -> None:
        await asyncio.sleep(0.2 * e)
        for step in range(steps):
            await model.generate(_ask(1000 * e + step))
            await asyncio.sleep(0.05)

    await asyncio.gather(*(episode(e) for e in range(n)))


def test_a_429_with_retry_after_holds_every_request_and_halves_concurrency() -> None:
    limit = RateLimit(requests=6, window_s=1.0, retry_after=True)
    with LoopbackServer(rate_limit=limit) as server:
        pool = ModelPool(concurrency=12, cache_mode="off", retry=RETRY)
        asyncio.run(_burst(pool, _config(server), 12))  # 12 at once: 6 refused
        state = next(iter(pool.limiter_states().values()))
        assert len(server.accepted) == 12  # every question answered in the end
        assert server.limited >= 1 and state.throttled == server.limited
        assert state.lowest is not None and state.lowest <= 6  # halved from 12 at most
    with LoopbackServer(rate_limit=limit) as server:
        pool = ModelPool(concurrency=8, cache_mode="off", retry=RETRY)
        asyncio.run(_episodes(pool, _config(server), 4, 6))
        arrivals = list(server.arrivals)
        assert len(server.accepted) == 25 and server.limited >= 1
    # after the first 429 (only requests already on their way arrive within 0.15 s), no
    # episode's next request reaches the server until the Retry-After it sent has passed
    first_refusal = _first_refusal_time(server)
    quiet_until = first_refusal + _retry_after_at(server, first_refusal)
    early = [t for t in arrivals if first_refusal + 0.15 < t < quiet_until - 0.05]
    assert early == []


def _first_refusal_time(server: LoopbackServer) -> float:
    """Arrival time of the first request the server refused: the first arrival that was
    not accepted."""
    accepted = set(server.accepted)
    return next(t for t in server.arrivals if t not in accepted)


def _retry_after_at(server: LoopbackServer, when: float) -> float:
    """The Retry-After the server sent at `when`: the time until its window frees a slot,
    rounded up to a tenth (the personality's rule, recomputed from its accepted times)."""
    import math

    window = server.rate_limit.window_s  # type: ignore[union-attr]
    inside = [t for t in server.accepted if when - window < t <= when]
    return max(0.1, math.ceil((min(inside) + window - when) * 10) / 10)


def test_without_retry_after_backoff_and_halving_still_finish_the_work() -> None:
    limit = RateLimit(requests=5, window_s=0.5, retry_after=False)
    with LoopbackServer(rate_limit=limit) as server:
        pool = ModelPool(concurrency=10, cache_mode="off", retry=RETRY)
        asyncio.run(_burst(pool, _config(server), 20))
        state = next(iter(pool.limiter_states().values()))
    assert len(server.accepted) == 20 and server.limited >= 1
    assert state.throttled == server.limited and state.paused_s == 0.0
    assert state.lowest is not None and state.lowest <= 5


def test_requests_per_minute_windows_hold_at_the_server() -> None:
    window = 0.5
    limit = RateLimit(requests=4, window_s=window, retry_after=True)
    with LoopbackServer(rate_limit=limit) as server:
        limits = Limits(requests_per_minute=4, window_s=window)
        pool = ModelPool(concurrency=8, cache_mode="off", retry=RETRY, limits=limits)
        asyncio.run(_burst(pool, _config(server), 12))
        arrivals = sorted(server.arrivals)
    assert server.limited == 0 and len(arrivals) == 12  # the pool kept under the limit
    for i, t in enumerate(arrivals):  # any window-long span holds at most 4 arrivals
        assert sum(1 for u in arrivals[i:] if u < t + window - 0.02) <= 4
    assert arrivals[-1] - arrivals[0] >= 2 * window - 0.05  # 12 requests need 3 windows


def test_additive_recovery_and_multiplicative_decrease() -> None:
    async def scenario() -> list[int | None]:
        limiter = RateLimiter(Limits(max_concurrency=8))
        seen = [limiter.concurrency]
        sent = limiter.started()
        limiter.throttled(None, sent)
        seen.append(limiter.concurrency)  # 8 -> 4
        limiter.throttled(None, sent)  # sent before the cut: same round, no second cut
        seen.append(limiter.concurrency)
        for _ in range(4):
            limiter.succeeded()
        seen.append(limiter.concurrency)  # 4 clean replies: 5
        for _ in range(5):
            limiter.succeeded()
        seen.append(limiter.concurrency)  # 5 more: 6
        for _ in range(100):
            limiter.succeeded()
        seen.append(limiter.concurrency)  # capped at max_concurrency
        await asyncio.sleep(0.001)
        limiter.throttled(2.0, limiter.started())  # a new round: 8 -> 4, paused 2 s
        seen.append(limiter.concurrency)
        seen.append(round(limiter.state().paused_s))
        return seen

    assert asyncio.run(scenario()) == [8, 4, 4, 5, 6, 8, 4, 2]


def test_two_agents_of_one_model_with_different_limits_are_refused() -> None:
    pool = ModelPool(cache_mode="off")
    config = ModelConfig(provider="openai", model="m", base_url="http://127.0.0.1:9/v1")
    pool.model(config, limits=MinuteLimits(rpm=10))
    pool.model(config.model_copy(update={"temperature": 0.5}), limits=MinuteLimits(rpm=10))
    with pytest.raises(Exception, match="two different rate limits"):
        pool.model(config.model_copy(update={"temperature": 0.7}), limits=MinuteLimits(rpm=20))


def test_a_run_against_a_rate_limited_endpoint_finishes_and_shows_its_limiter(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """A short portfolio run whose endpoint refuses above 3 requests per half second: the
    run finishes, its steps record the 429s the server sent, and the progress line's
    limiter state counts them."""
    limit = RateLimit(requests=3, window_s=0.5, retry_after=True)
    progress = RunProgress()
    with LoopbackServer(rate_limit=limit) as server:
        spec = spec_dict(synth_dataset_dir, server.openai_url, ["blinded"], ["memory_only"])
        spec["agents"] = [spec["agents"][0] | {"limits": {"rpm": 1000}, "max_attempts": 30}]
        spec["windows"] = [{"start": "2024-02-01", "end": "2024-02-07"}]
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path, progress))
        refused = server.limited
    steps = pd.read_parquet(next((tmp_path / "episodes").glob("scripted_*")) / "steps.parquet")
    assert refused >= 1 and int(steps["faults_429"].sum()) == refused
    assert progress.episodes_done == progress.episodes_total  # the index and the model
    assert f"429s {refused}" in progress.limiter and "in flight" in progress.limiter
