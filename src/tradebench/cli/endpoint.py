"""A dead endpoint reported at once: one TCP connect before a model command starts.

Without it a refused connection is a transient fault, retried with backoff for tens of
seconds before the command names it. `check_listening` connects to the endpoint's host and
port once (a connect, no request); a refusal, an unknown host or no answer within the
wait becomes one `ConfigError` line. A command whose replies may all be cached already
(a rerun) skips the check, so a finished evaluation replays without its server.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from tradebench.errors import ConfigError

CONNECT_WAIT_S = 3.0
"""Longest wait for the TCP connect (a firewall that drops packets answers nothing)."""
DEFAULT_PORTS = {"http": 80, "https": 443}

__all__ = ["CONNECT_WAIT_S", "check_listening", "endpoint_address"]


def endpoint_address(base_url: str) -> tuple[str, int]:
    """(host, port) of an endpoint root such as `http://127.0.0.1:8080/v1`.

    Raises:
        ConfigError: The URL has no host or an unknown scheme without a port.
    """
    parts = urlsplit(base_url)
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise ConfigError(
            f"--base-url {base_url!r} is not an endpoint root like http://127.0.0.1:8080/v1"
        )
    return parts.hostname, port


def check_listening(base_url: str, wait_s: float = CONNECT_WAIT_S) -> None:
    """Connect once to the endpoint's host and port, and close.

    Raises:
        ConfigError: Nothing listens there (refused), the host is unknown, or no answer
            came within `wait_s` seconds.
    """
    host, port = endpoint_address(base_url)
    try:
        with socket.create_connection((host, port), timeout=wait_s):
            return
    except ConnectionRefusedError:
        reason = "connection refused: nothing listens there"
    except socket.gaierror:
        reason = f"unknown host {host!r}"
    except TimeoutError:
        reason = f"no answer within {wait_s:g} s"
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    raise ConfigError(
        f"endpoint {base_url} is not reachable ({reason}); start the server or fix --base-url"
    )
