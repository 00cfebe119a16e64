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

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tradebench.data.panel import Panel
from tradebench.errors import ConfigError
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


Op = tuple[str, Callable[[], np.ndarray]]
"""A feature's name (without its window) and the function computing it."""


def _once(compute: Callable[[], Any]) -> Callable[[], Any]:
    """`compute`, evaluated on the first call only: intermediates several features share."""
    return functools.cache(compute)


def _kbar(x: AlphaInputs) -> Iterator[Op]:
    o, h, lo, c = x.open, x.high, x.low, x.close
    span = _once(lambda: h - lo + EPS)
    top, bottom = _once(lambda: np.maximum(o, c)), _once(lambda: np.minimum(o, c))
    yield "KMID", lambda: safe_div(c - o, o)
    yield "KLEN", lambda: safe_div(h - lo, o)
    yield "KMID2", lambda: (c - o) / span()
    yield "KUP", lambda: safe_div(h - top(), o)
    yield "KUP2", lambda: (h - top()) / span()
    yield "KLOW", lambda: safe_div(bottom() - lo, o)
    yield "KLOW2", lambda: (bottom() - lo) / span()
    yield "KSFT", lambda: safe_div(2 * c - h - lo, o)
    yield "KSFT2", lambda: (2 * c - h - lo) / span()
    for name, field in zip(PRICE, (o, h, lo, x.vwap), strict=True):
        yield name, lambda field=field: safe_div(field, c)


def _price_ops(x: AlphaInputs, w: int) -> Iterator[Op]:
    c = x.close
    reg = _once(lambda: rolling_regression(c, w))
    hi, lo = _once(lambda: rolling_max(x.high, w)), _once(lambda: rolling_min(x.low, w))
    imax, imin = _once(lambda: rolling_argmax(x.high, w)), _once(lambda: rolling_argmin(x.low, w))
    yield "ROC", lambda: safe_div(delay(c, w), c)
    yield "MA", lambda: safe_div(rolling_mean(c, w), c)
    yield "STD", lambda: safe_div(rolling_std(c, w), c)
    yield "BETA", lambda: safe_div(reg()[0], c)
    yield "RSQR", lambda: reg()[1]
    yield "RESI", lambda: safe_div(reg()[2], c)
    yield "MAX", lambda: safe_div(hi(), c)
    yield "MIN", lambda: safe_div(lo(), c)
    yield "QTLU", lambda: safe_div(rolling_quantile(c, w, 0.8), c)
    yield "QTLD", lambda: safe_div(rolling_quantile(c, w, 0.2), c)
    yield "RANK", lambda: rolling_rank_last(c, w)
    yield "RSV", lambda: (c - lo()) / (hi() - lo() + EPS)
    yield "IMAX", lambda: imax() / w
    yield "IMIN", lambda: imin() / w
    yield "IMXD", lambda: (imax() - imin()) / w


def _updown(diff: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(share of up moves, share of down moves, total abs move + EPS) over the window."""
    up = rolling_sum(np.where(np.isnan(diff), np.nan, np.maximum(diff, 0.0)), w)
    down = rolling_sum(np.where(np.isnan(diff), np.nan, np.maximum(-diff, 0.0)), w)
    total = rolling_sum(np.abs(diff), w) + EPS
    return up / total, down / total, total


def _flow_ops(x: AlphaInputs, w: int, shared: _Shared) -> Iterator[Op]:
    def counts() -> tuple[np.ndarray, np.ndarray]:
        diff = shared.diff()
        up = np.where(np.isnan(diff), np.nan, (diff > 0).astype(float))
        down = np.where(np.isnan(diff), np.nan, (diff < 0).astype(float))
        return rolling_mean(up, w), rolling_mean(down, w)

    cnt = _once(counts)
    sums = _once(lambda: _updown(shared.diff(), w))
    yield "CORR", lambda: rolling_corr(x.close, shared.log_volume(), w)
    yield "CORD", lambda: rolling_corr(shared.ratio(), shared.log_volume_ratio(), w)
    yield "CNTP", lambda: cnt()[0]
    yield "CNTN", lambda: cnt()[1]
    yield "CNTD", lambda: cnt()[0] - cnt()[1]
    yield "SUMP", lambda: sums()[0]
    yield "SUMN", lambda: sums()[1]
    yield "SUMD", lambda: sums()[0] - sums()[1]


def _volume_ops(x: AlphaInputs, w: int, shared: _Shared) -> Iterator[Op]:
    v = x.volume
    weighted = _once(lambda: np.abs(shared.ratio() - 1.0) * v)
    vsums = _once(lambda: _updown(shared.volume_diff(), w))
    yield "VMA", lambda: rolling_mean(v, w) / (v + EPS)
    yield "VSTD", lambda: rolling_std(v, w) / (v + EPS)
    yield "WVMA", lambda: rolling_std(weighted(), w) / (rolling_mean(weighted(), w) + EPS)
    yield "VSUMP", lambda: vsums()[0]
    yield "VSUMN", lambda: vsums()[1]
    yield "VSUMD", lambda: vsums()[0] - vsums()[1]


class _Shared:
    """Day-over-day changes every window's flow and volume features read, each computed
    on first use."""

    def __init__(self, x: AlphaInputs) -> None:
        c1, v1 = _once(lambda: delay(x.close, 1)), _once(lambda: delay(x.volume, 1))
        quiet = functools.partial(np.errstate, invalid="ignore", divide="ignore")

        def guarded(compute: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
            def run() -> np.ndarray:
                with quiet():
                    return compute()

            return _once(run)

        self.diff = guarded(lambda: x.close - c1())
        self.ratio = guarded(lambda: safe_div(x.close, c1()))
        self.log_volume = guarded(lambda: np.log(x.volume + 1.0))
        self.log_volume_ratio = guarded(lambda: np.log(safe_div(x.volume, v1()) + 1.0))
        self.volume_diff = guarded(lambda: x.volume - v1())


def _tail(inputs: AlphaInputs, rows: int) -> AlphaInputs:
    """The last `rows` rows of every input."""
    cut = {
        k: getattr(inputs, k)[-rows:] for k in ("open", "high", "low", "close", "vwap", "volume")
    }
    return AlphaInputs(**cut, vwap_source=inputs.vwap_source)


def _window_ops(x: AlphaInputs, w: int) -> Iterator[Op]:
    shared = _Shared(x)
    yield from _price_ops(x, w)
    yield from _flow_ops(x, w, shared)
    yield from _volume_ops(x, w, shared)


def _named(names: Sequence[str] | None) -> tuple[str, ...]:
    """The requested feature names (all 158 for None), each checked."""
    if names is None:
        return FEATURES
    unknown = sorted(set(names) - set(FEATURES))
    if unknown:
        raise ConfigError(f"unknown features {unknown}; see tradebench.features.alpha.FEATURES")
    return tuple(names)


def _window_of(name: str) -> int | None:
    """The rolling window of a feature name (`CORR20` -> 20), None for k-bar and price."""
    if name in KBAR or name in PRICE:
        return None
    return int(name[len(name.rstrip("0123456789")) :])


def alpha_features(inputs: AlphaInputs, names: Sequence[str] | None = None) -> AlphaFeatures:
    """The features `names` (default all 158, in Qlib's order), (F, T, N) float32, row s
    from input rows <= s. Only the requested features and what they share are computed:
    a sequence model's 20 cost a fraction of the 158."""
    wanted = _named(names)
    index = {name: i for i, name in enumerate(wanted)}
    out = np.empty((len(wanted), *inputs.close.shape), dtype=np.float32)
    windows = {_window_of(n) for n in wanted}
    if None in windows:
        for name, compute in _kbar(inputs):
            if name in index:
                out[index[name]] = compute()
    for w in WINDOWS:
        if w in windows:
            for op, compute in _window_ops(inputs, w):
                if f"{op}{w}" in index:
                    out[index[f"{op}{w}"]] = compute()
    np.nan_to_num(out, copy=False, nan=np.nan, posinf=np.nan, neginf=np.nan)
    return AlphaFeatures(names=wanted, values=out, vwap_source=inputs.vwap_source)


def alpha_features_last(inputs: AlphaInputs) -> np.ndarray:
    """(F, N) features of the last input row only: each window reads just the rows it
    needs, so a decision-time call costs a fraction of `alpha_features`."""
    index = {name: i for i, name in enumerate(FEATURES)}
    out = np.full((len(FEATURES), inputs.close.shape[1]), np.nan, dtype=np.float32)
    if inputs.close.shape[0] == 0:
        return out
    for name, compute in _kbar(_tail(inputs, 1)):
        out[index[name]] = compute()[-1]
    for w in WINDOWS:
        for op, compute in _window_ops(_tail(inputs, w + 1), w):
            out[index[f"{op}{w}"]] = compute()[-1]
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
