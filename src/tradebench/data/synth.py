"""A deterministic synthetic A-share market: the embedded default for the demo and tests.

Returns follow a factor model: a market factor with GARCH(1,1) volatility, sector factors,
three style factors and GARCH idiosyncratic noise, all with Student-t shocks (fat tails).
Closes are capped at each board's daily limit (sometimes with a one-sided locked day),
names are suspended for random spells, pay yearly dividends (a real adjustment factor),
some list mid-sample, and a cap-weighted index tracks a semi-annually reconstituted
top-K universe. Idiosyncratic jumps (up more often than down, as in A-shares) drive
limit hits. Calibrated to CSI300 2018-2026; figures in docs/datasets.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tradebench.data.assemble import assemble_dataset
from tradebench.data.boards import BOARD_RULES, board_of
from tradebench.data.schema import Manifest
from tradebench.errors import ConfigError

SECTORS = (
    "Financials",
    "Industrials",
    "Consumer",
    "Technology",
    "Health Care",
    "Materials",
    "Energy",
    "Utilities",
    "Real Estate",
    "Telecom",
)
BOARD_MIX = (("SH60", 0.48), ("SZ00", 0.30), ("SZ30", 0.14), ("SH688", 0.08))
DAILY = 1.0 / np.sqrt(252.0)


@dataclass(frozen=True)
class SynthConfig:
    """Knobs of the generator (defaults calibrated to CSI300 2018-2026)."""

    seed: int = 0
    n_names: int = 320
    start: str = "2021-01-04"
    n_days: int = 780
    index_size: int = 300
    market_vol: float = 0.21
    sector_vol: float = 0.09
    style_vol: float = 0.05
    idio_vol_median: float = 0.33
    jump_up_rate: float = 0.006
    jump_down_rate: float = 0.0015
    tail_df: float = 4.0
    suspend_rate: float = 0.0004
    suspend_mean_days: float = 12.0
    late_listing_frac: float = 0.05


def _t_shocks(rng: np.random.Generator, df: float, size: tuple[int, ...]) -> np.ndarray:
    """Student-t draws scaled to unit variance."""
    return rng.standard_t(df, size=size) * np.sqrt((df - 2.0) / df)


def _garch_path(rng: np.random.Generator, shocks: np.ndarray, vol: np.ndarray) -> np.ndarray:
    """GARCH(1,1) returns (T, K) with long-run daily vol `vol` (K,) from unit shocks."""
    alpha, beta = 0.08, 0.90
    omega = (vol**2) * (1 - alpha - beta)
    var = vol**2 * np.exp(rng.normal(0, 0.3, size=vol.shape))
    out = np.empty_like(shocks)
    for t in range(shocks.shape[0]):
        out[t] = np.sqrt(var) * shocks[t]
        var = omega + alpha * out[t] ** 2 + beta * var
    return out


def _calendar(start: str, n_days: int) -> pd.DatetimeIndex:
    days = pd.bdate_range(start, periods=int(n_days * 1.1))
    holiday = ((days.month == 10) & (days.day <= 7)) | (
        (days.month == 2) & (days.day.isin(range(10, 17)))
    )
    return days[~holiday][:n_days]


def _symbols(rng: np.random.Generator, n: int) -> list[str]:
    prefixes, weights = zip(*BOARD_MIX, strict=True)
    picks = rng.choice(len(prefixes), size=n, p=np.array(weights) / sum(weights))
    out, counters = [], dict.fromkeys(prefixes, 0)
    for k in picks:
        prefix = prefixes[k]
        counters[prefix] += 1
        width = 8 - len(prefix)
        base = 1 if prefix == "SZ00" else 0
        out.append(f"{prefix}{base + counters[prefix] * 7:0{width}d}")
    return out


def _returns(
    rng: np.random.Generator, cfg: SynthConfig, n_days: int
) -> tuple[np.ndarray, np.ndarray]:
    """Daily simple returns (T, N) from the factor model, and each name's sector."""
    n = cfg.n_names
    market = _garch_path(
        rng, _t_shocks(rng, cfg.tail_df, (n_days, 1)), np.array([cfg.market_vol * DAILY])
    )
    sectors = _garch_path(
        rng,
        _t_shocks(rng, cfg.tail_df, (n_days, len(SECTORS))),
        np.full(len(SECTORS), cfg.sector_vol * DAILY),
    )
    styles = rng.normal(0, cfg.style_vol * DAILY, size=(n_days, 3))
    sector_of = rng.integers(0, len(SECTORS), size=n)
    beta = np.clip(rng.normal(1.0, 0.25, size=n), 0.3, 1.8)
    exposure = rng.normal(0, 1, size=(n, 3))
    idio_vol = cfg.idio_vol_median * np.exp(rng.normal(0, 0.3, size=n)) * DAILY
    idio = _garch_path(rng, _t_shocks(rng, cfg.tail_df, (n_days, n)), idio_vol)
    jump_size = rng.uniform(0.06, 0.22, size=(n_days, n))
    jump_sign = rng.random((n_days, n))
    jumps = jump_size * (
        (jump_sign < cfg.jump_up_rate) * 1.0 - (jump_sign > 1 - cfg.jump_down_rate)
    )
    ret = market * beta + sectors[:, sector_of] + styles @ exposure.T + idio + jumps
    return ret, sector_of


def generate_frames(cfg: SynthConfig) -> dict[str, object]:
    """Generate bars, index, membership and sector frames in memory."""
    if cfg.n_days < 20 or cfg.n_names < 2:
        raise ConfigError("a synthetic market needs at least 20 days and 2 names")
    rng = np.random.default_rng(cfg.seed)
    days = _calendar(cfg.start, cfg.n_days)
    t_len, n = len(days), cfg.n_names
    symbols = _symbols(rng, n)
    ret, sector_of = _returns(rng, cfg, t_len)
    limits = np.array([BOARD_RULES[board_of(s)].limit_pct for s in symbols])
    prices = _price_paths(rng, cfg, ret, limits)
    listed = np.ones((t_len, n), dtype=bool)
    late = rng.random(n) < cfg.late_listing_frac
    first_day = min(60, t_len // 4)
    debut = rng.integers(first_day, max(first_day + 1, t_len // 2), size=late.sum())
    listed[:, late] = np.arange(t_len)[:, None] >= debut[None, :]
    bars = _to_long(days, symbols, prices, listed)
    index, membership = _index_and_membership(days, symbols, prices, listed, cfg.index_size)
    sectors = {s: SECTORS[k] for s, k in zip(symbols, sector_of, strict=True)}
    return {"bars": bars, "index": index, "membership": membership, "sectors": sectors}


def _price_paths(
    rng: np.random.Generator, cfg: SynthConfig, ret: np.ndarray, limits: np.ndarray
) -> dict[str, np.ndarray]:
    """Raw OHLC, factor, volume, amount and suspension arrays (T, N), tick 0.01."""
    t_len, n = ret.shape
    out = {k: np.empty((t_len, n)) for k in ("open", "high", "low", "close", "factor", "volume")}
    out["suspended"] = np.zeros((t_len, n), dtype=bool)
    prev = np.round(np.exp(rng.normal(np.log(15.0), 0.8, size=n)).clip(2.0, 400.0), 2)
    factor = np.ones(n)
    ex_day = rng.integers(0, 252, size=n)
    div_yield = rng.uniform(0.0, 0.03, size=n)
    shares = np.exp(rng.normal(np.log(2e9), 0.9, size=n))
    turnover = np.exp(rng.normal(np.log(0.012), 0.5, size=n))
    remaining = np.zeros(n, dtype=np.int64)
    for t in range(t_len):
        starts = (remaining == 0) & (rng.random(n) < cfg.suspend_rate)
        remaining[starts] = rng.geometric(1.0 / cfg.suspend_mean_days, size=starts.sum())
        halted = remaining > 0
        pay = (t % 252 == ex_day) & ~halted & (t > 0)
        dividend = np.where(pay, np.round(prev * div_yield, 2), 0.0)
        base = prev - dividend
        factor = factor * np.where(pay, prev / base, 1.0)
        up, down = np.round(base * (1 + limits), 2), np.round(base * (1 - limits), 2)
        close = np.clip(np.round(base * (1 + ret[t]), 2), down, up)
        gap = 0.35 * ret[t] + rng.normal(0, 0.004, size=n)
        open_ = np.clip(np.round(base * (1 + gap), 2), down, up)
        wick = np.abs(rng.normal(0, 0.008, size=(2, n)))
        high = np.minimum(np.round(np.maximum(open_, close) * (1 + wick[0]), 2), up)
        low = np.maximum(np.round(np.minimum(open_, close) * (1 - wick[1]), 2), down)
        locked = ((close == up) | (close == down)) & (rng.random(n) < 0.35)
        open_, high, low = (np.where(locked, close, a) for a in (open_, high, low))
        move = np.abs(close / base - 1)
        volume = np.round(shares * turnover * (1 + 8 * move) * np.exp(rng.normal(0, 0.3, n)), -2)
        flat = np.where(halted, prev, np.nan)
        for key, arr in (("open", open_), ("high", high), ("low", low), ("close", close)):
            out[key][t] = np.where(halted, flat, arr)
        out["volume"][t] = np.where(halted, 0.0, volume)
        out["factor"][t] = factor
        out["suspended"][t] = halted
        prev = out["close"][t]
        remaining = np.maximum(remaining - 1, 0)
    typical = (out["open"] + out["high"] + out["low"] + out["close"]) / 4
    out["amount"] = out["volume"] * typical
    out["shares"] = np.broadcast_to(shares, (t_len, n))
    return out


def _to_long(
    days: pd.DatetimeIndex, symbols: list[str], p: dict[str, np.ndarray], listed: np.ndarray
) -> pd.DataFrame:
    rows, cols = np.nonzero(listed)
    return pd.DataFrame(
        {
            "date": days.values[rows].astype("datetime64[ns]"),
            "symbol": np.asarray(symbols, dtype=object)[cols],
            "open": p["open"][rows, cols],
            "high": p["high"][rows, cols],
            "low": p["low"][rows, cols],
            "close": p["close"][rows, cols],
            "adj_factor": p["factor"][rows, cols],
            "volume": p["volume"][rows, cols],
            "amount": p["amount"][rows, cols],
        }
    )


def _membership_matrix(cap: np.ndarray, listed: np.ndarray, size: int, every: int) -> np.ndarray:
    """Top-`size` names by previous-day cap, reconstituted every `every` days."""
    t_len, n = cap.shape
    member = np.zeros((t_len, n), dtype=bool)
    seasoned = np.cumsum(listed, axis=0) >= 20
    for t0 in range(0, t_len, every):
        ref = max(t0 - 1, 0)
        score = np.where(seasoned[ref] | (t0 == 0) & listed[0], cap[ref], -np.inf)
        top = np.argsort(-score, kind="stable")[:size]
        top = top[np.isfinite(score[top])]
        member[t0 : t0 + every, top] = True
    return member


def _intervals(days: pd.DatetimeIndex, symbols: list[str], member: np.ndarray) -> pd.DataFrame:
    padded = np.vstack(
        [np.zeros((1, member.shape[1]), bool), member, np.zeros((1, member.shape[1]), bool)]
    )
    edges = np.diff(padded.astype(np.int8), axis=0)
    starts_t, starts_n = np.nonzero(edges == 1)
    ends_t, ends_n = np.nonzero(edges == -1)
    order_s, order_e = np.lexsort((starts_t, starts_n)), np.lexsort((ends_t, ends_n))
    day_values = days.values.astype("datetime64[ns]")
    end_days = [day_values[e] if e < len(days) else np.datetime64("NaT") for e in ends_t[order_e]]
    return pd.DataFrame(
        {
            "symbol": np.asarray(symbols, dtype=object)[starts_n[order_s]],
            "start": day_values[starts_t[order_s]],
            "end": np.array(end_days, dtype="datetime64[ns]"),
        }
    )


def _index_and_membership(
    days: pd.DatetimeIndex,
    symbols: list[str],
    p: dict[str, np.ndarray],
    listed: np.ndarray,
    size: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    cap = np.where(listed, p["shares"] * p["close"], 0.0)
    member = _membership_matrix(cap, listed, min(size, len(symbols)), every=126)
    adj_close = p["close"] * p["factor"]
    adj_open = p["open"] * p["factor"]
    prev_adj = np.vstack([adj_close[:1], adj_close[:-1]])
    weight = np.vstack([cap[:1], cap[:-1]]) * member
    weight = weight / weight.sum(axis=1, keepdims=True)
    r_close = np.nansum(weight * (adj_close / prev_adj - 1), axis=1)
    r_open = np.nansum(weight * (adj_open / prev_adj - 1), axis=1)
    r_close[0] = r_open[0] = 0.0
    close = 4000.0 * np.cumprod(1 + r_close)
    prev_close = np.concatenate([[4000.0], close[:-1]])
    open_ = prev_close * (1 + r_open)
    index = pd.DataFrame(
        {
            "date": days.values.astype("datetime64[ns]"),
            "symbol": "SYN300",
            "open": open_,
            "high": np.maximum(open_, close) * 1.003,
            "low": np.minimum(open_, close) * 0.997,
            "close": close,
            "volume": (p["volume"] * member).sum(axis=1),
        }
    )
    return index, _intervals(days, symbols, member)


def synthesize(out: Path, cfg: SynthConfig | None = None) -> Manifest:
    """Generate a synthetic market and write it as a dataset folder."""
    cfg = cfg or SynthConfig()
    frames = generate_frames(cfg)
    return assemble_dataset(
        Path(out),
        frames["bars"],
        market="cn",
        name=f"synthetic-cn-seed{cfg.seed}",
        price_basis="raw_with_factor",
        sources=["tradebench synthetic market generator"],
        index=frames["index"],
        membership=frames["membership"],
        sectors=frames["sectors"],
        manifest_extra={"synthetic": True, "seed": cfg.seed},
    )
