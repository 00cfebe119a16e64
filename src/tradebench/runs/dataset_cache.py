"""A dataset loaded (with its panel built) once per process, for every executor."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from tradebench.data.dataset import MANIFEST, Dataset, load_dataset


def cached_dataset(path: str) -> Dataset:
    """The dataset at `path`, loaded and its panel built on first use in this process; loaded
    again when its `manifest.json` has been rewritten since (a re-import at the same path)."""
    try:
        stat = os.stat(Path(path) / MANIFEST)
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    except OSError:
        stamp = (0, 0, 0)  # load_dataset names the missing manifest
    return _cached(path, stamp)


@lru_cache(maxsize=4)
def _cached(path: str, stamp: tuple[int, int, int]) -> Dataset:
    ds = load_dataset(path)
    ds.panel  # noqa: B018  (build once per process)
    return ds
