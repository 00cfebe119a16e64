"""Two models reached under one name never share cached replies.

llama.cpp answers any model name with the one model it serves, so a Gemma server and a
SmolLM2 server are both reached as `model: local`. Through the real path (`get_model` with
one reply cache, real HTTP servers), each server's replies stay its own: the second model
is asked, not replayed from the first one's record; the first replays its own; a replay
with both servers gone finds each model's replies from the cache file alone. The local
server serves its model file under a name carrying the file's digest, so what it lists is
what it is. A reused `mcq eval -o` folder asks the second model too.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mcq.conftest import aapl, base_pool  # noqa: F401  (fixtures)
from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.eval.run import EvalSpec, run_eval
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.errors import ConfigError
from tradebench.llm import Message
from tradebench.llm.base import get_model
from tradebench.llm.cache import ResponseCache
from tradebench.llm.identity import served_name
from tradebench.llm.local import (
    BundledModel,
    LocalServer,
    find_bundled_model,
    llama_cpp_available,
)
from tradebench.llm.loopback import LoopbackServer, Reply
from tradebench.llm.types import ChatResponse, ModelConfig

ASK = [Message(role="user", content="Which model are you?")]


def _ask(url: str, cache: ResponseCache) -> ChatResponse:
    config = ModelConfig(provider="openai", model="local", base_url=url, max_tokens=16)
    return asyncio.run(get_model(config, cache=cache).generate(ASK))


def test_two_models_under_one_name_keep_their_own_replies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-key")
    path = tmp_path / "cache.sqlite"
    smol = LoopbackServer(responder=lambda r: Reply.say("smollm2 here"), serves="smollm2-aa11")
    gemma = LoopbackServer(responder=lambda r: Reply.say("gemma here"), serves="gemma-bb22")
    with smol, gemma:
        cache = ResponseCache(path)
        assert _ask(smol.openai_url, cache).message.content == "smollm2 here"
        second = _ask(gemma.openai_url, cache)
        assert not second.cached and second.message.content == "gemma here"
        again = _ask(smol.openai_url, cache)
        assert again.cached and again.message.content == "smollm2 here"
        assert (len(smol.requests), len(gemma.requests)) == (1, 1)
        cache.close()
    with sqlite3.connect(path) as conn:
        served = sorted(r[0] for r in conn.execute("SELECT served FROM served"))
    assert served == ["gemma-bb22", "smollm2-aa11"]
    replay = ResponseCache(path, mode="replay")  # both servers are gone: nothing is sent
    assert _ask(gemma.openai_url, replay).message.content == "gemma here"
    assert _ask(smol.openai_url, replay).message.content == "smollm2 here"


def test_the_name_asked_keeps_the_old_key_when_it_says_what_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server listing the name asked for adds nothing to the key (older caches replay)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-key")
    with LoopbackServer(serves="local") as server:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        _ask(server.openai_url, cache)
        (request,) = [row.request for row in cache.rows()]
        assert '"served"' not in request and '"model":"local"' in request


def test_a_local_server_serves_its_file_under_the_files_digest(tmp_path: Path) -> None:
    one, other = tmp_path / "m.gguf", tmp_path / "copy" / "m.gguf"
    one.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    other.parent.mkdir()
    shutil.copy(one, other)
    assert served_name(one) == served_name(other)  # the same bytes: the same model
    other.write_bytes(other.read_bytes() + b"\0")
    assert served_name(one) != served_name(other)
    assert served_name(one).startswith("m-") and len(served_name(one)) == len("m-") + 12
    server = LocalServer(BundledModel(package="(file)", path=one))
    command = server.command()
    assert command[command.index("--model_alias") + 1] == served_name(one)


@pytest.mark.local_llm
@pytest.mark.slow
def test_two_real_local_servers_under_one_name_share_no_replies(tmp_path: Path) -> None:
    """The bundled model and a copy one byte longer (another file: another model to the
    cache), each on its own llama.cpp server, both asked as `model: local`."""
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        bundled = find_bundled_model()
    except ConfigError as exc:
        pytest.skip(str(exc))
    copy = tmp_path / "other.gguf"
    shutil.copy(bundled.path, copy)
    with copy.open("ab") as handle:
        handle.write(b"\0")
    other = bundled.model_copy(update={"path": copy})
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with LocalServer(bundled, n_threads=1) as first, LocalServer(other, n_threads=1) as second:
        assert first.alias != second.alias
        assert not _ask(first.base_url, cache).cached
        assert not _ask(second.base_url, cache).cached  # asked, not replayed from the first
        assert _ask(first.base_url, cache).cached
    assert len(cache) == 2


def test_a_reused_mcq_eval_folder_asks_the_other_model(
    base_pool: BuildResult,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`mcq eval -o OUT` run again on another model served as `local`: its answers are
    asked of it, not replayed from the first model's record in OUT's cache."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-not-a-key")
    path = tmp_path / "q.jsonl"
    write_jsonl(pick(base_pool, ["easy"]), path)
    letters = []
    for serves, letter in (("smollm2-aa11", "A"), ("gemma-bb22", "B")):
        with LoopbackServer(responder=lambda r, x=letter: Reply.say(x), serves=serves) as server:
            config = ModelConfig(provider="openai", model="local", base_url=server.openai_url)
            outcome = run_eval(path, EvalSpec(models=(config,)), tmp_path / "out", report=False)
            assert len(server.requests) == 1
        letters.append(pd.read_parquet(outcome.results)["letter"].tolist())
    assert letters == [["A"], ["B"]]
