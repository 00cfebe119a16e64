"""What a model is, for the reply cache's key: never a display name alone.

A public API's model name says what it is. A custom endpoint's may not: llama.cpp answers
any name with the one model it serves, so two servers both reached as `model: local` can
serve two different models, and a key of the name alone would replay one model's replies
for the other. Two parts close that:

- `served_name`: a bundled local server serves its model under a name carrying the model
  file's digest (`SmolLM2-135M-Instruct.Q4_1-1f0e...`), so what it lists is what it is;
- `served_identity`: a custom endpoint's model list (`GET {base_url}/models`) is read once;
  when the endpoint serves exactly one model and the name asked for is not listed, the
  listed name is what answers, and it joins the key (`cache.canonical_request`).
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import httpx

LIST_TIMEOUT_S = 5.0
"""How long the model list may take (a local server answers in milliseconds)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@functools.lru_cache(maxsize=32)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            sha.update(block)
    return sha.hexdigest()


def file_digest(path: Path) -> str:
    """sha256 hex of a file's bytes (computed once per path, size and mtime)."""
    stat = Path(path).stat()
    return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def served_name(path: Path) -> str:
    """The name a local server serves the model file `path` under: its stem and the first
    12 hex digits of its sha256, so two files never share one."""
    stem = _UNSAFE.sub("-", Path(path).name.removesuffix(".gguf")).strip("-") or "model"
    return f"{stem[:48]}-{file_digest(path)[:12]}"


def served_identity(asked: str, listed: list[str]) -> str | None:
    """The model that answers a request for `asked` at an endpoint listing `listed`, when
    that is not `asked` itself: the one listed model (None when `asked` is listed, or when
    the list is empty or names several: the name then says what answers)."""
    if asked in listed or len(listed) != 1:
        return None
    return listed[0]


async def endpoint_models(base_url: str) -> list[str] | None:
    """The model ids `GET {base_url}/models` lists (OpenAI format), or None when the
    endpoint does not answer with such a list."""
    try:
        async with httpx.AsyncClient(timeout=LIST_TIMEOUT_S) as client:
            reply = await client.get(f"{base_url.rstrip('/')}/models")
        data = reply.json().get("data") if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
