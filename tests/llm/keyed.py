"""What the keyed-endpoint tests of every model command share: the key, its variable and
the checks on what the loopback server heard and what the command wrote."""

from __future__ import annotations

from pathlib import Path

from tradebench.llm.loopback import LoopbackServer

KEY = "walrus-quartz-lantern-8081"
"""The key: a value found nowhere else, so a byte scan finds any copy of it."""
VARIABLE = "TB_ENDPOINT_SECRET_VALUE"


def bearer_heard(server: LoopbackServer) -> set[str | None]:
    """The `Authorization` headers of every request and probe the server received."""
    return {r.headers.get("authorization") for r in [*server.requests, *server.probes]}


def files_holding_key(folder: Path) -> list[str]:
    """Every file under `folder` whose bytes hold the key."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
