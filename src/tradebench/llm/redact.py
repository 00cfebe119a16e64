"""Scrub API keys and auth headers from anything that is logged, cached or reported.

Two nets: the literal values of secret-looking environment variables (so a key is caught
whatever its shape) and patterns for the usual shapes (`Bearer ...`, `sk-...`,
`x-api-key: ...`) in case a key arrives some other way.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
_SECRET_ENV = re.compile(r"(?i)(api[-_]?key|token|secret|password)")
_MIN_SECRET_LEN = 8
_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(
        r"(?i)((?:x-api-key|authorization|api[-_]?key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"
    ),
    re.compile(r"\b(sk-(?:ant-)?)[A-Za-z0-9_-]{8,}"),
)
_HINTS = ("bearer", "authorization", "api-key", "api_key", "apikey", "sk-")
"""Cheap substring tests: the patterns only run on text containing one of these."""
_AUTH_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})


@functools.lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (remembered: a
    redactor is built from the environment at every step)."""
    return _SECRET_ENV.search(name) is not None


class Redactor:
    """Replaces known secret values and key-shaped strings with `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        """Remember `secrets` (literal values to scrub), longest first."""
        values = {s for s in secrets if s and len(s) >= _MIN_SECRET_LEN}
        self._secrets = sorted(values, key=len, reverse=True)

    @classmethod
    def from_env(cls, extra: Iterable[str] = (), env: Mapping[str, str] | None = None) -> Redactor:
        """A redactor for every secret-looking environment variable plus `extra` values."""
        source = os.environ if env is None else env
        found = [v for k, v in source.items() if _secret_name(k)]
        return cls([*found, *extra])

    def text(self, value: str) -> str:
        """`value` with secrets and key-shaped substrings replaced."""
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        lowered = value.lower()
        if any(hint in lowered for hint in _HINTS):
            for pattern in _PATTERNS:
                value = pattern.sub(lambda m: m.group(1) + REDACTED, value)
        return value

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string in it (keys too) scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """A copy of `headers` with auth headers blanked and other values scrubbed."""
        return {
            k: REDACTED if k.lower() in _AUTH_HEADERS else self.text(str(v))
            for k, v in headers.items()
        }


class RedactingFilter(logging.Filter):
    """Logging filter that scrubs each record's final message before any handler sees it.

    Without a fixed redactor it reads the environment at each record, so keys exported
    after the logger was set up are caught too (records are rare: retries, failures).
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        """Use `redactor`, or a fresh one from the environment for every record."""
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's message with its redacted form; never drops a record."""
        redactor = self._redactor or Redactor.from_env()
        record.msg = redactor.text(record.getMessage())
        record.args = None
        return True


def llm_logger() -> logging.Logger:
    """The `tradebench.llm` logger, with a redacting filter attached exactly once."""
    logger = logging.getLogger("tradebench.llm")
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
    return logger
