"""Input coercion shared by the metric functions: any 1-D array-like to a float ndarray.

Pandas nullable columns (`Int64`, `Float64`, `boolean`) carry `pd.NA`; the step tables use
them for the LLM-only counters. Every metric converts its inputs through `as_floats`, so
missing values are always `np.nan` and the result is always a plain `float`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tradebench.errors import DataError


def as_floats(values: Any, name: str) -> np.ndarray:
    """Return `values` as a new 1-D float64 array, missing values (None, pd.NA) as NaN.

    Raises:
        DataError: `values` is not one-dimensional or not numeric.
    """
    try:
        if isinstance(values, pd.Series | pd.Index):
            out = values.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            out = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numeric; convert the column to numbers first") from exc
    if out.ndim != 1:
        raise DataError(f"{name} must be one-dimensional, got shape {out.shape}")
    return out


def same_length(a: np.ndarray, b: np.ndarray, names: str) -> None:
    """Raise `DataError` unless the two aligned inputs have the same length."""
    if len(a) != len(b):
        raise DataError(
            f"{names} must be aligned (same length), got {len(a)} and {len(b)}; "
            "align them on the step dates first"
        )
