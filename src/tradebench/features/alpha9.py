"""`alpha9`: the nine style factors (`features.style`) as a feature set of the factor models.

KTD-Fin trains its eighteen baselines on "Alpha9", which its paper names and does not
define; its nine style factors are the natural reading (docs/baselines_ml.md). Each feature
row s reads input rows <= s only, from the same raw fields Alpha158 reads, so a factor
model swaps one set for the other without another data path. Values are raw (un-normalised)
factor values; the factor models normalise them across each day's members as they do
Alpha158's.
"""

from __future__ import annotations

import numpy as np

from tradebench.features.style import LOOKBACK as STYLE_LOOKBACK
from tradebench.features.style import STYLE_FACTORS, StyleInputs, raw_style_factors
from tradebench.features.style import _inputs as style_inputs

ALPHA9 = STYLE_FACTORS
"""The nine feature names, in the style factors' order."""
LOOKBACK = STYLE_LOOKBACK
"""Input rows the last feature row needs (252 daily moves: momentum, the 52-week high)."""
FEATURE_VERSION = "alpha9-style/1"
"""Bumped whenever a definition changes (part of the model cache key)."""


def _inputs(raw: dict[str, np.ndarray]) -> StyleInputs:
    """Style inputs from the raw fields the Alpha158 path reads (`features.alpha.RAW_FIELDS`)."""
    fields = {k: raw[k] for k in ("close", "volume", "amount", "listed", "suspended")}
    fields["adj_open"] = raw["open"] * raw["adj_factor"]
    fields["adj_close"] = raw["close"] * raw["adj_factor"]
    return style_inputs(fields)


def alpha9_features(raw: dict[str, np.ndarray]) -> np.ndarray:
    """(9, T, N) float32 features of every input row (row s from rows <= s)."""
    factors = raw_style_factors(_inputs(raw))
    return np.stack([factors[name] for name in ALPHA9]).astype(np.float32)
