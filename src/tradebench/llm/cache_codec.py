"""How the reply cache keeps requests and replies small on disk, losslessly.

A tool loop sends the same system prompt and tool schemas at every call, and each call's
messages are the previous call's plus one or two new ones: stored whole, a 548-step
open-research episode wrote about 35 MB of requests. Here a request is split into
**parts** (each message, and the tool list), each stored once by its SHA-256 in the
`parts` table; the row keeps a small skeleton that names its parts by id. Parts, skeletons
and replies are deflated (zlib), with a **shared dictionary** once the file holds enough
text: the first `DICT_SOURCE_BYTES` of content written to the file become dictionary 1,
which every later entry is compressed against (JSON of the same shapes, the same prompts).
An entry records the dictionary it used (0 = none), so entries from before the dictionary
and files written by several processes decode alike.

Decoding gives back the exact text that was stored: the canonical request string (so its
sha256 with the sample index is the row's key) and the reply JSON. Rows written before
this format (plain TEXT columns) are read as they are.

Envelope of a stored value: one format byte, one dictionary byte, the zlib stream.
Format `P` is a request skeleton, `T` a text stored whole (a reply, or a request that is
not a JSON object).
"""

from __future__ import annotations

import collections
import hashlib
import json
import sqlite3
import zlib
from typing import Any

from tradebench.errors import DataError

PARTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS parts (
    id INTEGER PRIMARY KEY,
    digest BLOB NOT NULL UNIQUE,
    dict INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS dictionaries (
    id INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
"""
DICT_SOURCE_BYTES = 24 * 1024
"""Text written before the dictionary is made from it (zlib uses at most 32 KiB)."""
LEVEL = 9
MEMO_SIZE = 65_536
"""Part digests remembered per open cache (an id lookup saved per known part)."""
SKELETON = ord("P")
WHOLE = ord("T")
_SPLIT = ("messages", "tools")


def _canonical(value: Any) -> str:
    """JSON as the cache key writes it (sorted keys, no spaces, unicode kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class CacheCodec:
    """Encodes and decodes the stored values of one cache connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        """Use `conn` (its tables are created here if absent)."""
        self.conn = conn
        conn.executescript(PARTS_SCHEMA)
        self._dicts: dict[int, bytes] = {}
        self._ids: collections.OrderedDict[bytes, int] = collections.OrderedDict()
        self._source = bytearray()
        self._load_dictionary()

    # --- the dictionary ---------------------------------------------------------------
    def _load_dictionary(self) -> None:
        row = self.conn.execute("SELECT data FROM dictionaries WHERE id = 1").fetchone()
        if row is not None:
            self._dicts[1] = bytes(row[0])

    def _current(self) -> int:
        """The dictionary new entries use (0 until the file has one)."""
        return 1 if 1 in self._dicts else 0

    def _saw(self, text: bytes) -> None:
        """Collect text toward the dictionary; make it once there is enough."""
        if 1 in self._dicts:
            return
        self._source += text
        if len(self._source) < DICT_SOURCE_BYTES:
            return
        self.conn.execute(
            "INSERT OR IGNORE INTO dictionaries (id, data) VALUES (1, ?)",
            (bytes(self._source[:32768]),),
        )
        self._load_dictionary()  # another process may have made it first: use theirs
        self._source = bytearray()

    def _dictionary(self, number: int) -> bytes:
        if number not in self._dicts:
            row = self.conn.execute(
                "SELECT data FROM dictionaries WHERE id = ?", (number,)
            ).fetchone()
            if row is None:
                raise DataError(f"reply cache entry names dictionary {number}, which is absent")
            self._dicts[number] = bytes(row[0])
        return self._dicts[number]

    # --- deflate ----------------------------------------------------------------------
    def _pack(self, kind: int, text: bytes) -> bytes:
        number = self._current()
        if number:
            packer = zlib.compressobj(LEVEL, zdict=self._dicts[number])
        else:
            packer = zlib.compressobj(LEVEL)
        data = bytes([kind, number]) + packer.compress(text) + packer.flush()
        self._saw(text)
        return data

    def _unpack(self, blob: bytes) -> tuple[int, bytes]:
        if len(blob) < 2:
            raise DataError("reply cache entry is truncated")
        kind, number = blob[0], blob[1]
        try:
            if number:
                unpacker = zlib.decompressobj(zdict=self._dictionary(number))
            else:
                unpacker = zlib.decompressobj()
            return kind, unpacker.decompress(blob[2:]) + unpacker.flush()
        except zlib.error as exc:
            raise DataError(f"reply cache entry is not readable ({exc})") from None

    # --- parts ------------------------------------------------------------------------
    def _part(self, value: Any) -> int:
        text = _canonical(value).encode()
        digest = hashlib.sha256(text).digest()
        known = self._ids.get(digest)
        if known is not None:
            self._ids.move_to_end(digest)
            return known
        row = self.conn.execute("SELECT id FROM parts WHERE digest = ?", (digest,)).fetchone()
        if row is None:
            packed = self._pack(WHOLE, text)
            self.conn.execute(
                "INSERT OR IGNORE INTO parts (digest, dict, data) VALUES (?, ?, ?)",
                (digest, packed[1], packed),
            )
            row = self.conn.execute("SELECT id FROM parts WHERE digest = ?", (digest,)).fetchone()
        self._ids[digest] = int(row[0])
        if len(self._ids) > MEMO_SIZE:
            self._ids.popitem(last=False)
        return int(row[0])

    def _part_value(self, part_id: int) -> Any:
        row = self.conn.execute("SELECT data FROM parts WHERE id = ?", (part_id,)).fetchone()
        if row is None:
            raise DataError(f"reply cache entry names part {part_id}, which is absent")
        return json.loads(self._unpack(bytes(row[0]))[1])

    # --- the public pair ----------------------------------------------------------------
    def encode_request(self, canonical: str) -> bytes:
        """A request's canonical JSON as a skeleton of stored parts (or whole, deflated,
        when it is not a JSON object with the usual fields). Call inside a transaction."""
        try:
            payload = json.loads(canonical)
        except json.JSONDecodeError:
            payload = None
        if not isinstance(payload, dict) or _canonical(payload) != canonical:
            return self._pack(WHOLE, canonical.encode())
        skeleton = dict(payload)
        if isinstance(skeleton.get("messages"), list):
            skeleton["messages"] = [self._part(m) for m in skeleton["messages"]]
        if "tools" in skeleton:
            skeleton["tools"] = self._part(skeleton["tools"])
        return self._pack(SKELETON, _canonical(skeleton).encode())

    def decode_request(self, stored: str | bytes) -> str:
        """The canonical request text a stored value holds (TEXT rows as they are)."""
        if isinstance(stored, str):
            return stored
        kind, text = self._unpack(bytes(stored))
        if kind == WHOLE:
            return text.decode()
        skeleton = json.loads(text)
        if isinstance(skeleton.get("messages"), list):
            skeleton["messages"] = [self._part_value(i) for i in skeleton["messages"]]
        if "tools" in skeleton:
            skeleton["tools"] = self._part_value(skeleton["tools"])
        return _canonical(skeleton)

    def encode_text(self, text: str) -> bytes:
        """A reply's JSON, deflated against the dictionary."""
        return self._pack(WHOLE, text.encode())

    def decode_text(self, stored: str | bytes) -> str:
        """The text a stored reply holds (TEXT rows as they are)."""
        if isinstance(stored, str):
            return stored
        return self._unpack(bytes(stored))[1].decode()
