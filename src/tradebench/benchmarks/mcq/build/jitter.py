"""The paper's distractor rule for one value: 7-33% from the key, up or down, as displayed.

Shared by single-value options (`options.py`) and the parts of multi-part answers
(`composite.py`); it imports neither, so both can use it.
"""

from __future__ import annotations

import numpy as np

JITTER_LOW, JITTER_HIGH = 0.07, 0.33
"""Band of a distractor's distance from the key, as a fraction of the key (the paper's)."""
SMALL_INT = 7
"""Below this a count has fewer than three integers within 7-33% of it."""
MAX_DRAWS = 200


def display(kind: str, value: float | int | str, decimals: int = 2, unit: str = "") -> str:
    """Display text of a value (thousands separators, fixed decimals, unit)."""
    if kind == "number":
        return f"{float(value):,.{decimals}f}{unit}"
    if kind == "integer":
        return f"{int(value):,}"
    return str(value)


def relative_distance(option: float, key: float) -> float:
    """|option - key| / |key|: how far a distractor is from the key (key non-zero)."""
    return abs(option - key) / abs(key)


def _shown(kind: str, value: float | int, decimals: int) -> float:
    return float(display(kind, value, decimals).replace(",", ""))


def jitter_value(
    kind: str, value: float | int | str, decimals: int, rng: np.random.Generator
) -> float | int | None:
    """One value moved by the paper's rule (7-33% up or down, displayed value in the band);
    a count below `SMALL_INT` moves by 1-3 instead and stays >= 0. None when no draw fits."""
    key = float(value)
    if kind == "integer" and int(key) < SMALL_INT:
        steps = [k for k in (-3, -2, -1, 1, 2, 3) if int(key) + k >= 0]
        return int(key) + steps[int(rng.integers(len(steps)))]
    if key == 0:
        return None
    for _ in range(MAX_DRAWS):
        distance = rng.uniform(JITTER_LOW, JITTER_HIGH)
        moved: float | int = key * (1.0 + distance * (1 if rng.integers(2) else -1))
        if kind == "integer":
            moved = round(moved)
        band = relative_distance(_shown(kind, moved, decimals), _shown(kind, key, decimals))
        if JITTER_LOW <= band <= JITTER_HIGH:
            return moved
    return None
