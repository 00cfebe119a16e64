"""Datasets on disk: daily bars, index series, point-in-time membership, instruments."""

from tradebench.data.dataset import Dataset, load_dataset, write_dataset
from tradebench.data.schema import Manifest

__all__ = ["Dataset", "Manifest", "load_dataset", "write_dataset"]
