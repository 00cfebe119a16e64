"""A dataset loaded (with its panel built) once per process, for every executor."""

from __future__ import annotations

from functools import lru_cache

from tradebench.data.dataset import Dataset, load_dataset


@lru_cache(maxsize=4)
def cached_dataset(path: str) -> Dataset:
    """The dataset at `path`, loaded and its panel built on first use in this process."""
    ds = load_dataset(path)
    ds.panel  # noqa: B018  (build once per process)
    return ds
