"""Run folders are safe to share and to rerun: one writer at a time, and a rerun only with the
spec, the data and the code the folder was written with (or an explicit request to add new
cells).

A run folder holds an exclusive lock while a run writes it (`RUN_DIR/.lock`, holding the
writer's pid); a second `tradebench run` on it stops with a message naming that pid. The
resolved `spec.yaml` and `guard.json` are the folder's identity: a rerun whose spec differs in
anything that changes results is refused with the differing keys listed, and so is one whose
dataset's manifest (its tables' checksums and market fields) or `RESULTS_VERSION` differs, so
finished episodes and new ones never mix data or code. Either file unreadable refuses the run
in one line: without it the folder cannot say what it holds. Transport settings (endpoints,
key variables, timeouts, concurrency, the executor, the cache's location and mode, the
budget's caps) may change between reruns: they change how a run reaches its models, not
what it computes.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import shutil
import signal
import sys
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

import tradebench
from tradebench.data.schema import Manifest
from tradebench.errors import ConfigError
from tradebench.files import read_model, write_text_atomic
from tradebench.runs.records import SPEC_FILE
from tradebench.runs.spec import RunSpec

LOCK_FILE = ".lock"
GUARD_FILE = "guard.json"
RESULTS_VERSION = 1
"""Version of what a run computes from the same spec and data; raised by a change that alters
the results of existing episodes (a fill rule, a metric, a prompt), so that a folder written
before it is not resumed by code that would compute its remaining episodes differently."""
TRANSPORT_KEYS = frozenset({"concurrency", "budget", "cache", "executor"})
"""Top-level spec keys a rerun may change."""
AGENT_TRANSPORT_KEYS = frozenset({"base_url", "api_key_env", "timeout_s", "max_attempts", "limits"})
"""Agent keys a rerun may change (in the entry or in its `model` block)."""
GRID_AXES = ("windows", "modes", "masks", "seeds", "agents")
"""Spec lists whose new entries `--add-cells` may append."""
_PR_SET_PDEATHSIG = 1


class FolderGuard(BaseModel):
    """`RUN_DIR/guard.json`: the data and code version a run folder was written with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = Field(default=1, description="layout of this file")
    dataset_manifest_sha256: str = Field(
        description="sha256 of the dataset's canonical manifest (its tables' checksums, "
        "market, currency, price basis, index symbol)"
    )
    results_version: int = Field(description="`RESULTS_VERSION` of the code that wrote it")
    tradebench_version: str = Field(description="package version that wrote it (shown only)")


def manifest_sha256(manifest: Manifest) -> str:
    """sha256 of a dataset manifest's canonical JSON: it changes with any table's content."""
    return hashlib.sha256(manifest.model_dump_json().encode("utf-8")).hexdigest()


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run folder's exclusive lock for the duration of a run. A folder this call
    created is removed again when the run fails before writing anything into it, so a
    refused spec leaves no trace at its `--out`.

    Raises:
        ConfigError: Another process holds it (its pid is named).
    """
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        with _locked(run_dir):
            yield
    except BaseException:
        if created and [p.name for p in run_dir.iterdir()] == [LOCK_FILE]:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


@contextlib.contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
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


def _identity(spec: dict[str, Any], ignored: Collection[str] = ()) -> dict[str, Any]:
    """The part of a resolved spec that determines results (`ignored` keys left out)."""
    left_out = {*TRANSPORT_KEYS, *ignored, "schema_version"}
    out = {k: v for k, v in spec.items() if k not in left_out}
    out["agents"] = [agent_without_transport(agent) for agent in spec.get("agents", [])]
    return out


def agent_without_transport(agent: dict[str, Any]) -> dict[str, Any]:
    """An agent entry without its transport keys (its own and its `model` block's)."""
    out = {k: v for k, v in agent.items() if k not in AGENT_TRANSPORT_KEYS}
    if isinstance(out.get("model"), dict):
        out["model"] = {k: v for k, v in out["model"].items() if k not in AGENT_TRANSPORT_KEYS}
    return out


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= _flat(item, f"{prefix}{key}.")
        return out
    return {prefix.rstrip("."): value}


def differing_keys(
    old: dict[str, Any], new: dict[str, Any], ignored: Collection[str] = ()
) -> list[str]:
    """Dotted keys whose values differ between two resolved specs (transport and the
    `ignored` top-level keys left out)."""
    a, b = _flat(_identity(old, ignored)), _flat(_identity(new, ignored))
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def _only_additions(old: dict[str, Any], new: dict[str, Any], ignored: Collection[str]) -> bool:
    """Whether `new` keeps every cell of `old` unchanged and only appends to grid axes."""
    a, b = _identity(old, ignored), _identity(new, ignored)
    for axis in GRID_AXES:
        before, after = a.get(axis) or [], b.get(axis) or []
        if any(item not in after for item in before):
            return False
    rest = [k for k in a.keys() | b.keys() if k not in GRID_AXES]
    return all(a.get(k) == b.get(k) for k in rest)


GUARD_FIX = (
    "it records what this run folder was written with, so the folder cannot be resumed "
    "safely: restore it, or run into a new --out folder"
)


def check_folder(
    run_dir: Path,
    spec: RunSpec,
    manifest: Manifest,
    add_cells: bool = False,
    ignored: Collection[str] = (),
    hints: Mapping[str, str] | None = None,
) -> None:
    """Refuse to write into a folder written with another spec, dataset or results version.
    `ignored`: spec keys that change nothing the benchmark computes (the axes it does not
    declare, which a folder written before axes were declared recorded with values).
    `hints`: a benchmark's advice per dotted key, added to a refusal that names the key.

    Raises:
        ConfigError: `spec.yaml` or `guard.json` is unreadable; the spec differs in a key that
            changes results (listed) other than by adding cells with `add_cells`; the
            dataset's manifest or the results version differs from the folder's.
    """
    path = run_dir / GUARD_FILE
    guard = read_model(path, FolderGuard, "run folder guard", GUARD_FIX) if path.exists() else None
    check_spec(run_dir, spec, add_cells, ignored, hints)
    if guard is None:
        return  # a new folder, or one written before the guard file existed
    digest = manifest_sha256(manifest)
    if guard.dataset_manifest_sha256 != digest:
        raise ConfigError(
            f"{run_dir} was written with other data: dataset {spec.dataset} has changed since "
            f"(manifest sha256 {guard.dataset_manifest_sha256[:12]} then, {digest[:12]} now), "
            "so finished episodes and new ones would use different data: run into a new --out "
            "folder, or restore the dataset"
        )
    if guard.results_version != RESULTS_VERSION:
        raise ConfigError(
            f"{run_dir} was written by tradebench {guard.tradebench_version} (results version "
            f"{guard.results_version}); this one computes results version {RESULTS_VERSION}, "
            "so its new episodes would not match the finished ones: run into a new --out folder"
        )


def write_guard(run_dir: Path, spec: RunSpec, manifest: Manifest) -> None:
    """Write the resolved `spec.yaml` and `guard.json`, each whole or not at all."""
    guard = FolderGuard(
        dataset_manifest_sha256=manifest_sha256(manifest),
        results_version=RESULTS_VERSION,
        tradebench_version=tradebench.__version__,
    )
    write_text_atomic(run_dir / GUARD_FILE, guard.model_dump_json(indent=2) + "\n")
    write_text_atomic(run_dir / SPEC_FILE, spec.dump())


def check_spec(
    run_dir: Path,
    spec: RunSpec,
    add_cells: bool = False,
    ignored: Collection[str] = (),
    hints: Mapping[str, str] | None = None,
) -> None:
    """Refuse to write a changed spec into a folder written with another one (the `ignored`
    top-level keys left out of the comparison).

    Raises:
        ConfigError: `spec.yaml` is unreadable, or the spec differs in a key that changes
            results (listed), and the change is not a pure addition of cells with
            `add_cells` set.
    """
    path = run_dir / SPEC_FILE
    if not path.exists():
        return
    try:
        old = RunSpec.load(path).model_dump(mode="json")
    except ConfigError as exc:
        raise ConfigError(f"{exc}; {GUARD_FIX}") from None
    new = spec.model_dump(mode="json")
    keys = differing_keys(old, new, ignored)
    if not keys or (add_cells and _only_additions(old, new, ignored)):
        return
    before, after = _flat(old), _flat(new)
    shown = ", ".join(_change(k, before.get(k), after.get(k)) for k in keys[:8])
    shown += f" and {len(keys) - 8} more" if len(keys) > 8 else ""
    hint = (
        "run into a new --out folder"
        if add_cells
        else "run into a new --out folder, or pass --add-cells to only add new cells"
    )
    advice = "".join(f"; {hints[k]}" for k in keys if hints and k in hints)
    raise ConfigError(
        f"{run_dir} was written with another spec (differs in {shown}); its episodes would "
        f"not match this spec: {hint}{advice}"
    )


def _change(key: str, then: Any, now: Any) -> str:
    """A differing key, with its two values when both are short scalars."""
    scalars = (str, int, float, bool, type(None))
    if isinstance(then, scalars) and isinstance(now, scalars):
        shown = f"{then!r} then, {now!r} now"
        if len(shown) <= 80:
            return f"{key} ({shown})"
    return key


def die_with_parent() -> None:
    """Make this process get SIGKILL when its parent dies (Linux; used by worker pools), so a
    killed run leaves no orphaned workers."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:  # the parent died before the call took effect
            os._exit(1)
