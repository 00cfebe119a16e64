"""Reaching a Ray cluster, and getting a dataset onto each of its nodes once.

Ray is an optional extra (`pip install -e ".[ray]"`): `require_ray` imports it with an
install hint. The driver packs a dataset folder (its Parquet files and manifest) into the
object store once per run (`ship_dataset`); a worker that needs it `materialise`s it into
a node-local folder named by the content digest, under an exclusive file lock, so the
bytes cross the network once per node and reach the disk once per node, however many
episodes and worker processes run there. Later runs of the same data on that node reuse
the folder. Each worker process then loads it once (`dataset_cache.cached_dataset`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tradebench.errors import ConfigError

SCRATCH_ENV = "TRADEBENCH_RAY_SCRATCH"
"""Env var naming each node's local scratch folder (default: the system temp folder)."""
READY = ".complete"


def require_ray() -> ModuleType:
    """The `ray` module.

    Raises:
        ConfigError: Ray is not installed (with the install command).
    """
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "executor `ray` needs Ray: pip install -e '.[ray]' (or pip install 'ray>=2.40'), "
            "or use `executor: local`"
        ) from None
    return ray


def connect(address: str | None) -> ModuleType:
    """Join the cluster at `address` (None: `RAY_ADDRESS`, else a new local one-node
    cluster of this run's own, never one a `ray start` left on this machine); reuses a
    connection this process already has.

    Raises:
        ConfigError: Ray is missing or nothing answers at `address`.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    try:
        ray.init(address=target, include_dashboard=False, logging_level="WARNING")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "a new local cluster" if target == "local" else target
        raise ConfigError(
            f"cannot reach the Ray cluster at {where}: {exc}; start one with `ray start --head` "
            "and pass its address with --address HOST:6379"
        ) from None
    return ray


def scratch_root() -> Path:
    """This node's scratch folder for datasets and episode attempts."""
    base = os.environ.get(SCRATCH_ENV) or os.path.join(tempfile.gettempdir(), "tradebench-ray")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class DatasetShipment:
    """A dataset folder in the object store: its digest and a reference to its files."""

    digest: str
    """sha256 over the sorted relative paths and contents."""
    files: Any
    """ObjectRef of `{relative path: bytes}` (resolved only by a node that lacks the data)."""


def pack_folder(folder: Path) -> tuple[str, dict[str, bytes]]:
    """Every file under `folder` by relative path, and their digest."""
    files: dict[str, bytes] = {}
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        data = path.read_bytes()
        files[rel] = data
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest(), files


def ship_dataset(folder: Path) -> DatasetShipment:
    """Put a dataset folder into the object store once for the whole run."""
    ray = require_ray()
    digest, files = pack_folder(folder)
    return DatasetShipment(digest=digest, files=ray.put(files))


def node_copy(shipment: DatasetShipment) -> Path | None:
    """This node's finished copy of a shipped dataset, or None."""
    target = scratch_root() / "datasets" / shipment.digest
    return target if (target / READY).exists() else None


def materialise(
    shipment: DatasetShipment, files: dict[str, bytes] | None = None
) -> tuple[Path, bool]:
    """The node-local copy of a shipped dataset, and whether this call wrote it (at most
    one call per node and digest does); `files` are the shipment's contents when the
    caller has already fetched them (an async caller awaits them instead of blocking)."""
    root = scratch_root() / "datasets"
    root.mkdir(parents=True, exist_ok=True)
    target = root / shipment.digest
    if (target / READY).exists():
        return target, False
    with open(root / f"{shipment.digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / READY).exists():
            return target, False
        if files is None:
            files = require_ray().get(shipment.files)
        tmp = root / f".{shipment.digest}.{uuid.uuid4().hex}"
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (tmp / READY).write_text(shipment.digest + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    return target, True
