"""The reply cache's compact format: exact text back, small on disk, old files still read.

The oracle for a request is the key itself: the decoded text hashed with the sample index
must be the row's key, which `CachedModel` computed from the live request."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from tradebench.errors import DataError
from tradebench.llm.cache import ResponseCache
from tradebench.llm.cache_codec import DICT_SOURCE_BYTES
from tradebench.llm.loopback import Reply
from tradebench.llm.types import Message, ToolSpec

TOOLS = [
    ToolSpec(
        name="screen",
        description="Rank the universe by a feature; returns ids and values.",
        parameters={
            "type": "object",
            "properties": {"feature": {"type": "string"}, "top_k": {"type": "integer"}},
            "required": ["feature"],
        },
    )
]
SYSTEM = "You manage a long-only book of anonymised stocks. " * 20


def _conversation(day: int, turns: int) -> list[Message]:
    """A tool-loop conversation: it grows by two messages a turn, as the real loop does."""
    messages = [
        Message(role="system", content=SYSTEM),
        Message(role="user", content=f"day_+{day}: cash 0.{day:03d}, book " + "é ✓ " * 5),
    ]
    for turn in range(turns):
        rows = [{"id": f"asset_{(day * 7 + turn + k) % 300:04d}", "v": k / 7} for k in range(8)]
        messages.append(Message(role="assistant", content=f"screening ret_{turn}d"))
        messages.append(Message(role="user", content=json.dumps({"rows": rows})))
    return messages


def _sha_key(canonical: str, sample: int) -> str:
    return hashlib.sha256(f"{canonical}\n#sample={sample}".encode()).hexdigest()


def _record(loopback, make_model, path: Path, days: int) -> ResponseCache:
    cache = ResponseCache(path)
    model = make_model(cache=cache)

    async def loop() -> None:
        for day in range(days):
            for turns in range(3):
                await model.generate(_conversation(day, turns), TOOLS, "auto")

    asyncio.run(loop())
    return cache


def test_rows_decode_to_the_exact_request_and_reply(loopback, make_model, tmp_path):
    loopback.responder = lambda req: Reply.say(f"seen {len(req.body['messages'])} messages")
    cache = _record(loopback, make_model, tmp_path / "c.sqlite", days=30)
    rows = list(cache.rows())
    assert len(rows) == 90 == len(loopback.requests)
    for row in rows:
        # the key was computed from the live request: the decoded text must hash to it
        assert _sha_key(row.request, 0) == row.key
        reply = json.loads(row.response)
        assert "faults" not in reply and "cached" not in reply
    # a dictionary was made once enough text was written, and rows after it use it
    conn = sqlite3.connect(tmp_path / "c.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM dictionaries").fetchone()[0] == 1
    used = {r[0] for r in conn.execute("SELECT dict FROM parts")}
    assert used == {0, 1}
    # and every reply replays from the file as it was given live
    loopback.stop()
    replay = make_model(cache=ResponseCache(tmp_path / "c.sqlite", mode="replay"))
    again = asyncio.run(replay.generate(_conversation(29, 2), TOOLS, "auto"))
    assert again.cached and again.message.content == "seen 6 messages"


def test_repeated_prompts_are_stored_once(loopback, make_model, tmp_path):
    cache = _record(loopback, make_model, tmp_path / "c.sqlite", days=30)
    text = sum(len(r.request) + len(r.response) for r in cache.rows())
    cache.close()
    conn = sqlite3.connect(tmp_path / "c.sqlite")
    stored = conn.execute(
        "SELECT (SELECT SUM(LENGTH(data)) FROM parts) + "
        "(SELECT SUM(LENGTH(request) + LENGTH(response)) FROM replies)"
    ).fetchone()[0]
    # the system prompt alone is ~1 KB in each of the 90 requests; stored once
    assert text > 150_000 and stored < text / 10
    parts = conn.execute("SELECT COUNT(*) FROM parts").fetchone()[0]
    # distinct parts: the system prompt, the tool list, two assistant texts (the same every
    # day) and, each day, the day's message and two screens
    assert parts == 1 + 1 + 2 + 30 * 3
    assert text > DICT_SOURCE_BYTES


def test_a_file_of_the_old_format_still_replays(loopback, make_model, tmp_path):
    """Rows written before the compact format (TEXT columns, rowid table) read as before."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE replies (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
        "request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)"
    )
    live = ResponseCache(tmp_path / "new.sqlite")
    model = make_model(cache=live)
    first = asyncio.run(model.generate(_conversation(0, 1), TOOLS, "auto"))
    (row,) = live.rows()
    conn.execute(
        "INSERT INTO replies VALUES (?, ?, ?, ?, 0)",
        (row.key, row.model, row.request, row.response),
    )
    # what the endpoint said it serves (`llm.identity`) is part of the key: carry it over
    conn.execute("CREATE TABLE served (endpoint TEXT, model TEXT, served TEXT)")
    with sqlite3.connect(tmp_path / "new.sqlite") as new:
        conn.executemany("INSERT INTO served VALUES (?, ?, ?)", new.execute("SELECT * FROM served"))
    conn.commit()
    conn.close()
    loopback.stop()
    old = ResponseCache(path, mode="replay")
    again = asyncio.run(make_model(cache=old).generate(_conversation(0, 1), TOOLS, "auto"))
    assert again.cached and again.message == first.message
    assert list(old.rows()) == [row]


def test_a_damaged_entry_is_one_clear_error(loopback, make_model, tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    asyncio.run(make_model(cache=cache).generate(_conversation(0, 0), TOOLS, "auto"))
    cache.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE replies SET response = ?", (b"T\x00not deflate",))
    conn.commit()
    conn.close()
    replay = make_model(cache=ResponseCache(path, mode="replay"))
    with pytest.raises(DataError, match="not readable"):
        asyncio.run(replay.generate(_conversation(0, 0), TOOLS, "auto"))
