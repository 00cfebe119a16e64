"""Run folders are safe to share and to rerun: one writer at a time, and a rerun only with the
spec the folder was written with (or an explicit request to add new cells).

A run folder holds an exclusive lock while a run writes it (`RUN_DIR/.lock`, holding the
writer's pid); a second `tradebench run` on it stops with a message naming that pid. The
resolved `spec.yaml` is the folder's identity: a rerun whose spec differs in anything that
changes results is refused with the differing keys listed. Transport settings (endpoints,
key variables, timeouts, concurrency, the executor, the cache's location and mode, the
budget's caps) may change between reruns: they change how a run reaches its models, not
what it computes.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tradebench.errors import ConfigError
from tradebench.runs.records import SPEC_FILE
from tradebench.runs.spec import RunSpec

LOCK_FILE = ".lock"
TRANSPORT_KEYS = frozenset({"concurrency", "budget", "cache", "executor"})
"""Top-level spec keys a rerun may change."""
AGENT_TRANSPORT_KEYS = frozenset({"base_url", "api_key_env", "timeout_s", "max_attempts"})
"""Agent keys a rerun may change."""
GRID_AXES = ("windows", "modes", "masks", "seeds", "agents")
"""Spec lists whose new entries `--add-cells` may append."""
_PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run folder's exclusive lock for the duration of a run.

    Raises:
        ConfigError: Another process holds it (its pid is named).
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_FILE
    with path.open("a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise ConfigError(
                f"run folder {run_dir} is being written by another process (pid {holder}); "
                "wait for it to finish, or run into another --out folder"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)


def _identity(spec: dict[str, Any]) -> dict[str, Any]:
    """The part of a resolved spec that determines results."""
    out = {k: v for k, v in spec.items() if k not in TRANSPORT_KEYS and k != "schema_version"}
    out["agents"] = [
        {k: v for k, v in agent.items() if k not in AGENT_TRANSPORT_KEYS}
        for agent in spec.get("agents", [])
    ]
    return out


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= _flat(item, f"{prefix}{key}.")
        return out
    return {prefix.rstrip("."): value}


def differing_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two resolved specs (transport left out)."""
    a, b = _flat(_identity(old)), _flat(_identity(new))
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def _only_additions(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether `new` keeps every cell of `old` unchanged and only appends to grid axes."""
    a, b = _identity(old), _identity(new)
    for axis in GRID_AXES:
        before, after = a.get(axis) or [], b.get(axis) or []
        if any(item not in after for item in before):
            return False
    rest = [k for k in a.keys() | b.keys() if k not in GRID_AXES]
    return all(a.get(k) == b.get(k) for k in rest)


def check_spec(run_dir: Path, spec: RunSpec, add_cells: bool = False) -> None:
    """Refuse to write a changed spec into a folder written with another one.

    Raises:
        ConfigError: The spec differs in a key that changes results (listed), and the
            change is not a pure addition of cells with `add_cells` set.
    """
    path = run_dir / SPEC_FILE
    if not path.exists():
        return
    try:
        old = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return  # an unreadable spec is rewritten; the episodes keep their own records
    old = RunSpec.model_validate(old).model_dump(mode="json")
    new = spec.model_dump(mode="json")
    keys = differing_keys(old, new)
    if not keys or (add_cells and _only_additions(old, new)):
        return
    shown = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
    hint = (
        "run into a new --out folder"
        if add_cells
        else "run into a new --out folder, or pass --add-cells to only add new cells"
    )
    raise ConfigError(
        f"{run_dir} was written with another spec (differs in {shown}); its episodes would "
        f"not match this spec: {hint}"
    )


def die_with_parent() -> None:
    """Make this process get SIGKILL when its parent dies (Linux; used by worker pools), so a
    killed run leaves no orphaned workers."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:  # the parent died before the call took effect
            os._exit(1)
