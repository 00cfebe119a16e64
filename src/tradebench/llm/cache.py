"""Content-addressed reply cache in SQLite, with `readwrite`, `replay` and `off` modes.

The key is the sha256 of the canonical request (provider, model, sampling settings,
`extra`, messages, tools, tool_choice) plus the sample index. The endpoint (`base_url`)
and the key are not part of it: the same model replays after moving servers, and the cache
never sees a credential. Rows are redacted before they are written.

Requests are kept as skeletons of content-addressed parts and every stored value is
deflated against a shared dictionary (`llm.cache_codec`): about 0.4 KB a call instead of
9 KB, decoded back to the exact text; `ResponseCache.rows()` reads them.

A custom endpoint that answers the name asked for with another model it lists (a local
server reached as `model: local`) has that model in the key too (`served`, see
`llm.identity`); the file remembers what each endpoint answered, so a replay sends nothing
and still finds the recorded replies.

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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel

from tradebench.errors import CacheMiss, ConfigError, DataError
from tradebench.llm.cache_codec import CacheCodec
from tradebench.llm.identity import endpoint_models, served_identity
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
    request BLOB NOT NULL,
    response BLOB NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS served (
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    served TEXT NOT NULL,
    PRIMARY KEY (endpoint, model)
)
"""
"""A file made before the compact format keeps its table (TEXT columns with a rowid):
the values are told apart by their type, so old and new rows read alike."""


def canonical_request(
    config: ModelConfig,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    tool_choice: ToolChoice,
    served: str | None = None,
) -> str:
    """The request as canonical JSON (sorted keys, no spaces): what the key hashes;
    `served` is the model that answers when it is not the one named (`llm.identity`)."""
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
    if config.forced_choice != "ladder":  # a pinned wire form; the ladder's rung is not keyed
        payload["forced_choice"] = config.forced_choice
    if served is not None:  # absent when the name says what answers: older keys stay
        payload["served"] = served
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(canonical: str, sample_index: int) -> str:
    """sha256 hex of the canonical request plus the sample index."""
    return hashlib.sha256(f"{canonical}\n#sample={sample_index}".encode()).hexdigest()


class StoredReply(NamedTuple):
    """One cache row as text: what `ResponseCache.rows()` yields."""

    key: str
    model: str
    request: str
    """The canonical request (its sha256 with the sample index is `key`)."""
    response: str
    """The stored reply's JSON (redacted; without `NOT_STORED` fields)."""


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
        self._codec: CacheCodec | None = None
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
            conn.executescript(_SCHEMA)
            self._codec = CacheCodec(conn)
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
        assert self._codec is not None
        text = self._codec.decode_text(row[0])
        return ChatResponse.model_validate_json(text).model_copy(update={"cached": True})

    def put(self, key: str, model: str, request: str, response: ChatResponse) -> None:
        """Store a reply (redacted) unless the key is already present."""
        self.put_many([(key, model, request, response)])

    def put_many(self, rows: Sequence[tuple[str, str, str, ChatResponse]]) -> None:
        """Store (key, model, request, reply) rows in order, each unless its key is already
        present (the first of a key wins), in one transaction."""
        if self._conn is None or self.mode != "readwrite":
            return
        bodies = [
            self._redactor.text(response.model_dump_json(exclude=NOT_STORED))
            for _, _, _, response in rows
        ]
        with self._lock:
            assert self._codec is not None
            for (key, model, request, _), body in zip(rows, bodies, strict=True):
                present = self._conn.execute(
                    "SELECT 1 FROM replies WHERE key = ?", (key,)
                ).fetchone()
                if present is not None:
                    continue
                self._conn.execute(
                    "INSERT OR IGNORE INTO replies (key, model, request, response, created) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (
                        key,
                        model,
                        self._codec.encode_request(self._redactor.text(request)),
                        self._codec.encode_text(body),
                        time.time(),
                    ),
                )
            self._conn.commit()
        self.stats.writes += len(rows)

    async def lookup(self, key: str) -> ChatResponse | None:
        """`get` as a coroutine: the interface `CachedModel` awaits, so a cache owned by
        another process (`runs.ray.services.RemoteCache`) can stand in for this one."""
        return self.get(key)

    async def store(self, key: str, model: str, request: str, response: ChatResponse) -> None:
        """`put` as a coroutine (see `lookup`)."""
        self.put(key, model, request, response)

    def rows(self) -> Iterator[StoredReply]:
        """Every stored row decoded to text, in the order written."""
        if self._conn is None:
            return
        with self._lock:
            found = self._conn.execute(
                "SELECT key, model, request, response FROM replies ORDER BY created"
            ).fetchall()
            assert self._codec is not None
            decoded = [
                StoredReply(k, m, self._codec.decode_request(q), self._codec.decode_text(r))
                for k, m, q, r in found
            ]
        yield from decoded

    def served_for(self, endpoint: str, model: str) -> str | None:
        """What `endpoint` answered for `model` when last asked (`remember_served`): the
        served model, or None when the name itself answered or it was never asked; an
        endpoint never seen falls back to what every endpoint answered for `model` alike
        (the same model moved to another server)."""
        if self._conn is None:
            return None
        with self._lock:
            row = self._conn.execute(
                "SELECT served FROM served WHERE endpoint = ? AND model = ?",
                (self._redactor.text(endpoint), model),
            ).fetchone()
            rows = (
                [row]
                if row is not None
                else self._conn.execute(
                    "SELECT DISTINCT served FROM served WHERE model = ?", (model,)
                ).fetchall()
            )
        return (rows[0][0] or None) if len(rows) == 1 else None

    def remember_served(self, endpoint: str, model: str, served: str | None) -> None:
        """Record what `endpoint` answers for `model` (None: the name itself)."""
        if self._conn is None or self.mode != "readwrite":
            return
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO served (endpoint, model, served) VALUES (?, ?, ?)",
                (self._redactor.text(endpoint), model, served or ""),
            )
            self._conn.commit()

    async def served_async(self, endpoint: str, model: str) -> str | None:
        """`served_for` as a coroutine (see `lookup`)."""
        return self.served_for(endpoint, model)

    async def remember_served_async(self, endpoint: str, model: str, served: str | None) -> None:
        """`remember_served` as a coroutine (see `lookup`)."""
        self.remember_served(endpoint, model, served)

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
        self._served: tuple[str | None] | None = None

    async def served(self) -> str | None:
        """The model that answers this config's requests when its name does not say so
        (`llm.identity`): asked of a custom OpenAI-style endpoint once it answers, and
        remembered in the cache file (in `replay`, read from the file alone: a replay
        sends nothing; while the endpoint does not answer, read from the file too)."""
        if self._served is not None:
            return self._served[0]
        endpoint, name = self.config.base_url, self.config.model
        if endpoint is None or self.config.provider != "openai":
            self._served = (None,)
            return None
        if self.cache.mode == "readwrite":
            listed = await endpoint_models(endpoint)
            if listed is not None:
                self._served = (served_identity(name, listed),)
                await self.cache.remember_served_async(endpoint, name, self._served[0])
                return self._served[0]
        remembered = await self.cache.served_async(endpoint, name)
        if self.cache.mode == "replay":  # the file does not change under a replay
            self._served = (remembered,)
        return remembered

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
        served = await self.served()
        canonical = canonical_request(self.config, messages, tools, tool_choice, served)
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
