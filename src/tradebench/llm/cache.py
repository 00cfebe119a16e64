"""Content-addressed reply cache in SQLite, with `readwrite`, `replay` and `off` modes.

The key is the sha256 of the canonical request (provider, model, sampling settings,
`extra`, messages, tools, tool_choice) plus the sample index. The endpoint (`base_url`)
and the key are not part of it: the same model replays after moving servers, and the cache
never sees a credential. Rows are redacted before they are written.

SQLite runs in WAL mode with a busy timeout, so several processes can share one file;
the first writer of a key wins (`INSERT OR IGNORE`), which keeps replays deterministic.
Unreadable replies (garbage, truncated JSON) are cached too, so a replay reproduces the
recorded run exactly, failures included; transport failures are never cached, and neither
are a reply's `faults` (the endpoint's 429s, 5xx, timeouts and retries before it): a hit
carries none.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from tradebench.errors import CacheMiss, ConfigError, DataError
from tradebench.llm.redact import Redactor
from tradebench.llm.types import ChatResponse, Message, ModelConfig, ToolChoice, ToolSpec

if TYPE_CHECKING:
    from tradebench.llm.base import ChatModel

CacheMode = Literal["readwrite", "replay", "off"]
KEY_VERSION = 1
NOT_STORED = frozenset({"cached", "faults"})
"""`ChatResponse` fields that describe how a reply was obtained, not the reply: never
stored, so a hit comes back with `cached=True` and no faults, and replays are exact."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def canonical_request(
    config: ModelConfig,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    tool_choice: ToolChoice,
) -> str:
    """The request as canonical JSON (sorted keys, no spaces): what the key hashes."""
    payload: dict[str, Any] = {
        "v": KEY_VERSION,
        "provider": config.provider,
        "model": config.model,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "extra": config.extra,
        "messages": [m.model_dump(mode="json") for m in messages],
        "tools": [t.model_dump(mode="json") for t in tools],
        "tool_choice": tool_choice,
    }
    if config.tool_protocol != "auto":  # absent by default: older caches keep their keys
        payload["tool_protocol"] = config.tool_protocol
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(canonical: str, sample_index: int) -> str:
    """sha256 hex of the canonical request plus the sample index."""
    return hashlib.sha256(f"{canonical}\n#sample={sample_index}".encode()).hexdigest()


class CacheStats(BaseModel):
    """Live counts for one cache (not part of run records)."""

    hits: int = 0
    """Replies served from the cache."""
    misses: int = 0
    """Lookups that found nothing."""
    writes: int = 0
    """Replies stored."""


class ResponseCache:
    """A SQLite file of replies keyed by `request_key`."""

    def __init__(self, path: str | Path, mode: CacheMode = "readwrite") -> None:
        """Open (or create) the cache file; `mode` is `readwrite`, `replay` or `off`.

        Raises:
            ConfigError: Unknown mode, or replay mode on a file that does not exist.
        """
        if mode not in ("readwrite", "replay", "off"):
            raise ConfigError(f"cache mode {mode!r} is not one of readwrite, replay, off")
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.stats = CacheStats()
        self._redactor = Redactor.from_env()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if mode == "replay" and not self.path.exists():
            raise ConfigError(
                f"replay mode needs an existing cache, but {self.path} does not exist; "
                "record the run first in readwrite mode"
            )
        if mode != "off":
            self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
        except sqlite3.Error as exc:  # a folder, or a place no file can be made
            raise DataError(
                f"{self.path} cannot hold a reply cache ({exc}); point the cache at a file "
                "(spec `cache.path`, --cache)"
            ) from None
        try:
            conn.execute("PRAGMA busy_timeout=60000")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            conn.commit()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise DataError(
                f"{self.path} is not a reply cache ({exc}); move it away, or point the cache "
                "at another file (spec `cache.path`)"
            ) from None
        return conn

    def get(self, key: str) -> ChatResponse | None:
        """The cached reply for `key`, or None."""
        if self._conn is None:
            return None
        with self._lock:
            row = self._conn.execute(
                "SELECT response FROM replies WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return ChatResponse.model_validate_json(row[0]).model_copy(update={"cached": True})

    def put(self, key: str, model: str, request: str, response: ChatResponse) -> None:
        """Store a reply (redacted) unless the key is already present."""
        if self._conn is None or self.mode != "readwrite":
            return
        body = self._redactor.text(response.model_dump_json(exclude=NOT_STORED))
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO replies (key, model, request, response, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, model, self._redactor.text(request), body, time.time()),
            )
            self._conn.commit()
        self.stats.writes += 1

    async def lookup(self, key: str) -> ChatResponse | None:
        """`get` as a coroutine: the interface `CachedModel` awaits, so a cache owned by
        another process (`runs.ray_services.RemoteCache`) can stand in for this one."""
        return self.get(key)

    async def store(self, key: str, model: str, request: str, response: ChatResponse) -> None:
        """`put` as a coroutine (see `lookup`)."""
        self.put(key, model, request, response)

    def __len__(self) -> int:
        """Number of stored replies."""
        if self._conn is None:
            return 0
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        if self._conn is not None:
            with self._lock:
                self._conn.close()
            self._conn = None


class CachedModel:
    """A `ChatModel` that answers from a `ResponseCache` before asking the endpoint."""

    def __init__(self, inner: ChatModel, cache: ResponseCache) -> None:
        """Wrap `inner` with `cache`."""
        self.inner = inner
        self.config = inner.config
        self.cache = cache

    async def generate(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        sample_index: int = 0,
    ) -> ChatResponse:
        """Serve from the cache, else call and store; see `ChatModel.generate`.

        Raises:
            CacheMiss: Replay mode and the request was never recorded.
        """
        if self.cache.mode == "off":
            return await self.inner.generate(messages, tools, tool_choice, sample_index)
        canonical = canonical_request(self.config, messages, tools, tool_choice)
        key = request_key(canonical, sample_index)
        hit = await self.cache.lookup(key)
        if hit is not None:
            return hit
        if self.cache.mode == "replay":
            raise CacheMiss(
                f"replay: no cached reply for {self.config.label} request {key[:12]} "
                f"(sample {sample_index}) in {self.cache.path}; the request differs from the "
                "recorded run, or record it first in readwrite mode"
            )
        response = await self.inner.generate(messages, tools, tool_choice, sample_index)
        await self.cache.store(key, self.config.label, canonical, response)
        return response
