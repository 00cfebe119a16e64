"""Content-addressed cache: keys, modes, parse failures replayed, several processes at once."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ProcessPoolExecutor

import pytest

from tradebench.errors import CacheMiss, ConfigError
from tradebench.llm.cache import ResponseCache, canonical_request, request_key
from tradebench.llm.loopback import Reply
from tradebench.llm.types import CallFaults, ChatResponse, Message, ModelConfig, Usage

ASK = [Message(role="user", content="price of AAPL?")]


def test_key_is_canonical_and_sensitive(price_tool):
    cfg = ModelConfig(provider="openai", model="m", base_url="http://127.0.0.1:1/v1")
    moved = cfg.model_copy(update={"base_url": "http://127.0.0.1:2/v1", "api_key_env": "X"})
    base = canonical_request(cfg, ASK, [price_tool], "auto")
    assert base == canonical_request(moved, ASK, [price_tool], "auto")  # endpoint not in key
    key = request_key(base, 0)
    assert len(key) == 64 and key == request_key(base, 0)
    assert key != request_key(base, 1)
    other_inputs = [
        canonical_request(
            cfg, [Message(role="user", content="price of MSFT?")], [price_tool], "auto"
        ),
        canonical_request(cfg, ASK, [], "auto"),
        canonical_request(cfg, ASK, [price_tool], "get_price"),
        canonical_request(cfg.model_copy(update={"temperature": 0.7}), ASK, [price_tool], "auto"),
        canonical_request(cfg.model_copy(update={"model": "n"}), ASK, [price_tool], "auto"),
    ]
    assert len({request_key(c, 0) for c in [base, *other_inputs]}) == 6


def test_readwrite_serves_repeats_from_cache(loopback, make_model, tmp_path, price_tool):
    cache = ResponseCache(tmp_path / "c.sqlite")
    model = make_model(cache=cache)
    first = asyncio.run(model.generate(ASK, [price_tool], "get_price"))
    second = asyncio.run(model.generate(ASK, [price_tool], "get_price"))
    third = asyncio.run(model.generate(ASK, [price_tool], "get_price", sample_index=1))
    assert not first.cached and second.cached and not third.cached
    assert second.model_dump(exclude={"cached"}) == first.model_dump(exclude={"cached"})
    assert (first.http_attempts, second.http_attempts) == (1, 0)  # a hit met no endpoint
    assert second.faults == CallFaults()
    assert len(loopback.requests) == 2 and len(cache) == 2
    assert (cache.stats.hits, cache.stats.writes) == (1, 2)
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_replay_needs_no_server_and_misses_are_errors(loopback, make_model, tmp_path):
    path = tmp_path / "c.sqlite"
    recorded = asyncio.run(make_model(cache=ResponseCache(path)).generate(ASK))
    loopback.stop()
    replay = make_model(cache=ResponseCache(path, mode="replay"))
    again = asyncio.run(replay.generate(ASK))
    assert again.cached and again.message == recorded.message
    assert again.latency_s == recorded.latency_s  # recorded latency, not a new one
    with pytest.raises(CacheMiss, match="no cached reply"):
        asyncio.run(replay.generate([Message(role="user", content="never asked")]))


def test_replay_of_missing_file_and_bad_mode_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        ResponseCache(tmp_path / "absent.sqlite", mode="replay")
    with pytest.raises(ConfigError, match="readwrite, replay, off"):
        ResponseCache(tmp_path / "c.sqlite", mode="sometimes")  # type: ignore[arg-type]


def test_off_mode_always_calls(loopback, make_model, tmp_path):
    model = make_model(cache=ResponseCache(tmp_path / "c.sqlite", mode="off"))
    for _ in range(2):
        asyncio.run(model.generate(ASK))
    assert len(loopback.requests) == 2 and not (tmp_path / "c.sqlite").exists()


def test_parse_failures_are_cached_and_replayed(loopback, make_model, tmp_path):
    loopback.push(Reply.garbage())
    path = tmp_path / "c.sqlite"
    first = asyncio.run(make_model(cache=ResponseCache(path)).generate(ASK))
    loopback.stop()
    again = asyncio.run(make_model(cache=ResponseCache(path, mode="replay")).generate(ASK))
    assert first.parse_error and again.parse_error == first.parse_error


def _write_rows(args: tuple[str, int]) -> int:
    path, worker = args
    cache = ResponseCache(path)
    reply = ChatResponse(
        message=Message(role="assistant", content=f"w{worker}"),
        usage=Usage(),
        finish_reason="stop",
        latency_s=0.0,
    )
    for i in range(40):
        cache.put(request_key(f"shared-{i}", 0), "openai:m", "{}", reply)  # contended keys
        cache.put(request_key(f"w{worker}-{i}", 0), "openai:m", "{}", reply)
    cache.close()
    return worker


def test_several_processes_share_one_file(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert sorted(pool.map(_write_rows, [(path, 0), (path, 1)])) == [0, 1]
    cache = ResponseCache(path, mode="replay")
    assert len(cache) == 40 + 2 * 40
    winner = cache.get(request_key("shared-0", 0))
    assert winner is not None and winner.message.content in ("w0", "w1")
