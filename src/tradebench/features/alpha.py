"""Alpha158-style features for the factor-model baselines, vectorised over the panel.

Qlib's Alpha158 library: 9 k-bar shapes, 4 price ratios and 29 rolling operators over
5/10/20/30/60 days (158 features), all on adjusted prices and volume. Feature row s reads
input rows <= s only, and at most `LOOKBACK` of them, so the features a view computes from
its last `LOOKBACK` visible rows equal the panel computation's row for T-1.

Suspended and unlisted cells are missing (NaN), as in Qlib's data; a rolling feature is
NaN when its window holds a missing cell. Where a dataset has no traded amount, VWAP is
estimated by the typical price (high + low + close) / 3 and `vwap_source` says so.
Definitions: `docs/baselines_ml.md`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tradebench.data.panel import Panel
from tradebench.features.rolling import (
    EPS,
    delay,
    rolling_argmax,
    rolling_argmin,
    rolling_corr,
    rolling_max,
    rolling_mean,
    rolling_min,
    rolling_quantile,
    rolling_rank_last,
    rolling_regression,
    rolling_std,
    rolling_sum,
    safe_div,
)
from tradebench.view import MarketView

WINDOWS = (5, 10, 20, 30, 60)
KBAR = ("KMID", "KLEN", "KMID2", "KUP", "KUP2", "KLOW", "KLOW2", "KSFT", "KSFT2")
PRICE = ("OPEN0", "HIGH0", "LOW0", "VWAP0")
ROLLING = (
    "ROC", "MA", "STD", "BETA", "RSQR", "RESI", "MAX", "MIN", "QTLU", "QTLD", "RANK", "RSV",
    "IMAX", "IMIN", "IMXD", "CORR", "CORD", "CNTP", "CNTN", "CNTD", "SUMP", "SUMN", "SUMD",
    "VMA", "VSTD", "WVMA", "VSUMP", "VSUMN", "VSUMD",
)  # fmt: skip
FEATURES = KBAR + PRICE + tuple(f"{op}{w}" for op in ROLLING for w in WINDOWS)
"""The 158 feature names, in Qlib's order."""
LOOKBACK = max(WINDOWS) + 1
"""Input rows the last feature row needs (a 60-day window of daily changes)."""
LABEL_HORIZON = 2
"""Rows after the feature row that the label reads (close t+2 over close t+1)."""
FEATURE_VERSION = "alpha158-style/1"
"""Bumped whenever a definition changes (part of the model cache key)."""
VWAP_REPORTED = "amount / volume"
VWAP_ESTIMATED = "typical price (high + low + close) / 3: the dataset has no amount"

__all__ = [
    "FEATURES",
    "FEATURE_VERSION",
    "LABEL_HORIZON",
    "LOOKBACK",
    "RAW_FIELDS",
    "WINDOWS",
    "AlphaFeatures",
    "AlphaInputs",
    "alpha_features",
    "alpha_features_last",
    "cs_zscore",
    "forward_label",
    "inputs_from_arrays",
    "inputs_from_panel",
    "inputs_from_view",
]

RAW_FIELDS = (
    "open", "high", "low", "close", "adj_factor", "volume", "amount", "listed", "suspended",
)  # fmt: skip


@dataclass(frozen=True)
class AlphaInputs:
    """(T, N) adjusted bars, NaN where a cell is suspended or unlisted."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    vwap: np.ndarray
    volume: np.ndarray
    """Adjusted volume: raw shares / adjustment factor."""
    vwap_source: str


@dataclass(frozen=True)
class AlphaFeatures:
    """`values[f, s, i]`: feature f on row s for column i (float32)."""

    names: tuple[str, ...]
    values: np.ndarray
    vwap_source: str


def inputs_from_arrays(raw: dict[str, np.ndarray]) -> AlphaInputs:
    """Inputs from raw (T, N) arrays keyed like the panel fields (plus listed, suspended)."""
    ok = raw["listed"] & ~raw["suspended"]
    factor = np.where(ok, raw["adj_factor"], np.nan)
    adj = {k: raw[k] * factor for k in ("open", "high", "low", "close")}
    reported = np.isfinite(raw["amount"]) & (raw["volume"] > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        vwap = np.where(reported, raw["amount"] / raw["volume"] * factor, np.nan)
    typical = (adj["high"] + adj["low"] + adj["close"]) / 3.0
    estimated = ~reported & ok
    source = VWAP_REPORTED if not estimated.any() else VWAP_ESTIMATED
    return AlphaInputs(
        open=adj["open"],
        high=adj["high"],
        low=adj["low"],
        close=adj["close"],
        vwap=np.where(reported, vwap, typical),
        volume=np.where(ok, raw["volume"], np.nan) / factor,
        vwap_source=source,
    )


def inputs_from_panel(panel: Panel, start: int, stop: int) -> AlphaInputs:
    """Inputs from panel rows [start, stop) (offline: training sets and evaluation)."""
    source = {**panel.fields, "listed": panel.listed, "suspended": panel.suspended}
    return inputs_from_arrays({k: source[k][start:stop] for k in RAW_FIELDS})


def inputs_from_view(view: MarketView, lookback: int | None = LOOKBACK) -> AlphaInputs:
    """Inputs from the last `lookback` visible rows of a point-in-time view (all if None)."""
    return inputs_from_arrays({k: view.window(k, lookback) for k in RAW_FIELDS})


def _kbar(x: AlphaInputs) -> Iterator[tuple[str, np.ndarray]]:
    o, h, lo, c = x.open, x.high, x.low, x.close
    span = h - lo + EPS
    top, bottom = np.maximum(o, c), np.minimum(o, c)
    yield "KMID", safe_div(c - o, o)
    yield "KLEN", safe_div(h - lo, o)
    yield "KMID2", (c - o) / span
    yield "KUP", safe_div(h - top, o)
    yield "KUP2", (h - top) / span
    yield "KLOW", safe_div(bottom - lo, o)
    yield "KLOW2", (bottom - lo) / span
    yield "KSFT", safe_div(2 * c - h - lo, o)
    yield "KSFT2", (2 * c - h - lo) / span
    for name, field in zip(PRICE, (o, h, lo, x.vwap), strict=True):
        yield name, safe_div(field, c)


def _price_ops(x: AlphaInputs, w: int) -> Iterator[tuple[str, np.ndarray]]:
    c = x.close
    slope, r2, resid = rolling_regression(c, w)
    hi, lo = rolling_max(x.high, w), rolling_min(x.low, w)
    imax, imin = rolling_argmax(x.high, w), rolling_argmin(x.low, w)
    yield "ROC", safe_div(delay(c, w), c)
    yield "MA", safe_div(rolling_mean(c, w), c)
    yield "STD", safe_div(rolling_std(c, w), c)
    yield "BETA", safe_div(slope, c)
    yield "RSQR", r2
    yield "RESI", safe_div(resid, c)
    yield "MAX", safe_div(hi, c)
    yield "MIN", safe_div(lo, c)
    yield "QTLU", safe_div(rolling_quantile(c, w, 0.8), c)
    yield "QTLD", safe_div(rolling_quantile(c, w, 0.2), c)
    yield "RANK", rolling_rank_last(c, w)
    yield "RSV", (c - lo) / (hi - lo + EPS)
    yield "IMAX", imax / w
    yield "IMIN", imin / w
    yield "IMXD", (imax - imin) / w


def _updown(diff: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(share of up moves, share of down moves, total abs move + EPS) over the window."""
    up = rolling_sum(np.where(np.isnan(diff), np.nan, np.maximum(diff, 0.0)), w)
    down = rolling_sum(np.where(np.isnan(diff), np.nan, np.maximum(-diff, 0.0)), w)
    total = rolling_sum(np.abs(diff), w) + EPS
    return up / total, down / total, total


def _flow_ops(
    x: AlphaInputs, w: int, shared: dict[str, np.ndarray]
) -> Iterator[tuple[str, np.ndarray]]:
    c, diff = x.close, shared["diff"]
    up = np.where(np.isnan(diff), np.nan, (diff > 0).astype(float))
    down = np.where(np.isnan(diff), np.nan, (diff < 0).astype(float))
    cntp, cntn = rolling_mean(up, w), rolling_mean(down, w)
    sump, sumn, _ = _updown(diff, w)
    yield "CORR", rolling_corr(c, shared["log_volume"], w)
    yield "CORD", rolling_corr(shared["ratio"], shared["log_volume_ratio"], w)
    yield "CNTP", cntp
    yield "CNTN", cntn
    yield "CNTD", cntp - cntn
    yield "SUMP", sump
    yield "SUMN", sumn
    yield "SUMD", sump - sumn


def _volume_ops(
    x: AlphaInputs, w: int, shared: dict[str, np.ndarray]
) -> Iterator[tuple[str, np.ndarray]]:
    v = x.volume
    weighted = np.abs(shared["ratio"] - 1.0) * v
    vsump, vsumn, _ = _updown(shared["volume_diff"], w)
    yield "VMA", rolling_mean(v, w) / (v + EPS)
    yield "VSTD", rolling_std(v, w) / (v + EPS)
    yield "WVMA", rolling_std(weighted, w) / (rolling_mean(weighted, w) + EPS)
    yield "VSUMP", vsump
    yield "VSUMN", vsumn
    yield "VSUMD", vsump - vsumn


def _shared(x: AlphaInputs) -> dict[str, np.ndarray]:
    c1, v1 = delay(x.close, 1), delay(x.volume, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "diff": x.close - c1,
            "ratio": safe_div(x.close, c1),
            "log_volume": np.log(x.volume + 1.0),
            "log_volume_ratio": np.log(safe_div(x.volume, v1) + 1.0),
            "volume_diff": x.volume - v1,
        }


def _tail(inputs: AlphaInputs, rows: int) -> AlphaInputs:
    """The last `rows` rows of every input."""
    cut = {
        k: getattr(inputs, k)[-rows:] for k in ("open", "high", "low", "close", "vwap", "volume")
    }
    return AlphaInputs(**cut, vwap_source=inputs.vwap_source)


def _window_ops(x: AlphaInputs, w: int) -> Iterator[tuple[str, np.ndarray]]:
    shared = _shared(x)
    yield from _price_ops(x, w)
    yield from _flow_ops(x, w, shared)
    yield from _volume_ops(x, w, shared)


def alpha_features(inputs: AlphaInputs) -> AlphaFeatures:
    """All 158 features, (F, T, N) float32, row s from input rows <= s."""
    index = {name: i for i, name in enumerate(FEATURES)}
    out = np.empty((len(FEATURES), *inputs.close.shape), dtype=np.float32)
    for name, values in _kbar(inputs):
        out[index[name]] = values
    for w in WINDOWS:
        for op, values in _window_ops(inputs, w):
            out[index[f"{op}{w}"]] = values
    np.nan_to_num(out, copy=False, nan=np.nan, posinf=np.nan, neginf=np.nan)
    return AlphaFeatures(names=FEATURES, values=out, vwap_source=inputs.vwap_source)


def alpha_features_last(inputs: AlphaInputs) -> np.ndarray:
    """(F, N) features of the last input row only: each window reads just the rows it
    needs, so a decision-time call costs a fraction of `alpha_features`."""
    index = {name: i for i, name in enumerate(FEATURES)}
    out = np.full((len(FEATURES), inputs.close.shape[1]), np.nan, dtype=np.float32)
    if inputs.close.shape[0] == 0:
        return out
    for name, values in _kbar(_tail(inputs, 1)):
        out[index[name]] = values[-1]
    for w in WINDOWS:
        for op, values in _window_ops(_tail(inputs, w + 1), w):
            out[index[f"{op}{w}"]] = values[-1]
    np.nan_to_num(out, copy=False, nan=np.nan, posinf=np.nan, neginf=np.nan)
    return out


def forward_label(close: np.ndarray, tradable: np.ndarray) -> np.ndarray:
    """The training label of row s: close[s+2] / close[s+1] - 1 (adjusted closes).

    It reads two rows *after* s by design: the learner only ever applies it to rows whose
    horizon ends before the decision day. NaN where row s+1 is not tradable (no entry) or
    a close is missing, and on the last two rows.
    """
    out = np.full(close.shape, np.nan)
    if close.shape[0] > LABEL_HORIZON:
        entry, exit_ = close[1:-1], close[2:]
        with np.errstate(invalid="ignore", divide="ignore"):
            ret = exit_ / entry - 1.0
        out[:-2] = np.where(tradable[1:-1] & np.isfinite(ret), ret, np.nan)
    return out


def cs_zscore(values: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Cross-sectional z-score of each row over `sample` cells (ddof 0); NaN elsewhere.

    Works on (T, N) or (F, T, N) arrays (the last axis is the cross-section).
    """
    masked = np.where(sample & np.isfinite(values), values, np.nan)
    count = np.isfinite(masked).sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(masked, axis=-1, keepdims=True) / count
        std = np.sqrt(np.nansum((masked - mean) ** 2, axis=-1, keepdims=True) / count)
        z = (masked - mean) / std
    return np.where((count >= 2) & (std > 0), z, np.nan)
