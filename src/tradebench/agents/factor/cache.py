"""File cache of trained factor models, keyed by data, config and windows.

The key is the sha256 of a canonical JSON payload: the digest of the exact visible rows
the model trains on (a dataset checksum restricted to what training reads), the model
spec, the training windows, the seed and the feature version. Any change to one of them
is a different file. Files are pickles this project wrote itself: a cache folder must
not be shared with untrusted parties.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tradebench.agents.factor.fork import openmp_guard
from tradebench.files import write_text_atomic

__all__ = [
    "CachedModel",
    "cache_key",
    "cached_entries",
    "default_cache_dir",
    "load_model",
    "save_model",
]

CACHE_ENV = "TRADEBENCH_MODEL_CACHE"
"""Environment variable that overrides the default cache folder."""


@dataclass(frozen=True)
class CachedModel:
    """A trained estimator plus what produced it (JSON-able `meta`)."""

    model: Any
    meta: dict[str, Any]


def default_cache_dir() -> Path:
    """`$TRADEBENCH_MODEL_CACHE`, else `$XDG_CACHE_HOME/tradebench/models`, else ~/.cache."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tradebench" / "models"


def cache_key(payload: dict[str, Any]) -> str:
    """sha256 of the payload's canonical JSON."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def load_model(folder: Path, key: str) -> CachedModel | None:
    """The cached model under `key`, or None when absent or unreadable."""
    path = Path(folder) / f"{key}.pkl"
    if not path.exists():
        return None
    openmp_guard()  # unpickling a LightGBM booster runs OpenMP code
    try:
        with path.open("rb") as fh:
            cached = pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    return cached if isinstance(cached, CachedModel) else None


def save_model(folder: Path, key: str, cached: CachedModel) -> Path:
    """Write `cached` under `key` atomically (plus a readable `.json` of its meta)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.pkl"
    partial = folder / f"{key}.{os.getpid()}.partial"
    with partial.open("wb") as fh:
        pickle.dump(cached, fh, protocol=pickle.HIGHEST_PROTOCOL)
    partial.replace(path)  # concurrent writers of one key write the same model
    meta = folder / f"{key}.json"
    write_text_atomic(meta, json.dumps(cached.meta, indent=2, sort_keys=True, default=str) + "\n")
    return path


def cached_entries(folder: Path) -> list[dict[str, Any]]:
    """The readable metadata of every model in `folder` (key added), newest first.

    Reads the `.json` beside each `.pkl` only (no unpickling); unreadable ones are skipped.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    out = []
    paths = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in paths:
        if not (folder / f"{path.stem}.pkl").exists():
            continue
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict):
            out.append({"key": path.stem, **meta})
    return out
