"""Typed analyst roles: per name and decision day, one `Signal` each, from the view only.

Every analyst is a deterministic function `(view, pool, settings) -> list[Signal]` that
reads the market only through the point-in-time `MarketView` (bars before T, records with
`ts_available <=` the decision instant):

- `technical`: momentum and volatility over `momentum_days` of adjusted closes, z-scored
  across the pool; `score = tanh((z_mom - z_vol / 2) / 2)`, confidence = share of the
  look-back with a finite return. Cites no record (its evidence is bars).
- `news`: the visible news of the last `news_lookback_days` (minus `news_delay_minutes`):
  count, hours since the newest, and a deliberately small headline lexicon (`POSITIVE`,
  `NEGATIVE`, whole words): `score = tanh(net / (n + 1))` with `net` = positive minus
  negative hits; confidence = `min(1, n / 10)`. This is a word count, not sentiment
  analysis. Cites the newest ten articles used.
- `filings`: the latest visible filing: form (10-K, 10-Q, 8-K from its title) and days
  since it was accepted. It has no view on direction: `score = 0`, confidence =
  `exp(-days / 90)` (fresh information). Cites that filing.
- `fundamental`: valuation from what the view holds (no fundamentals table): where the
  last close sits in the range of the last `RANGE_DAYS` (252) adjusted closes,
  `position = (last - low) / (high - low)`, read as cheap (low in its range) or dear:
  `score = 1 - 2 x position`; and the latest visible periodic report (10-K or 10-Q: form
  and period end). Confidence = `coverage / 2` (finite closes / 252, at most 1) plus 1/2
  when that report was accepted within `FRESH_REPORT_DAYS` (120). Cites that report.
- `sentiment`: the tone of the visible news over a longer look-back
  (`sentiment_lookback_days`, 30, minus `news_delay_minutes`): each headline is positive,
  negative or neutral by the sign of its lexicon hits; `score = (up - down) / (n + 1)`,
  confidence = `min(1, n / 30)`; features add the count of the last `news_lookback_days`.
  Cites the newest ten headlines.
- `risk`: over `risk_days` (60) daily returns of adjusted closes: the maximum drawdown,
  the downside volatility `sqrt(mean(min(r, 0)^2))` and the beta to the index's close
  (population covariance over days where both returns are finite); each z-scored across
  the names asked about; `score = tanh(-(z_downside + z_depth + z_beta) / 3)` (less risk
  ranks higher; depth = -drawdown), confidence = share of finite returns. Cites nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from tradebench.view import MarketView

POSITIVE = frozenset(
    [
        "beat",
        "beats",
        "surge",
        "surges",
        "soar",
        "soars",
        "record",
        "gain",
        "gains",
        "rally",
        "rallies",
        "upgrade",
        "upgraded",
        "raise",
        "raises",
        "growth",
        "strong",
        "outperform",
        "bullish",
        "jump",
        "jumps",
        "rise",
        "rises",
        "profit",
    ]
)
"""Headline words counted as positive by the news analyst."""
NEGATIVE = frozenset(
    [
        "miss",
        "misses",
        "plunge",
        "plunges",
        "fall",
        "falls",
        "drop",
        "drops",
        "downgrade",
        "downgraded",
        "cut",
        "cuts",
        "weak",
        "loss",
        "losses",
        "lawsuit",
        "probe",
        "bearish",
        "slump",
        "slumps",
        "decline",
        "declines",
        "fraud",
        "warning",
    ]
)
"""Headline words counted as negative by the news analyst."""
_WORD = re.compile(r"[a-z]+")
_FORM = re.compile(r"\b(10-K|10-Q|8-K)\b")
_PERIODIC = frozenset({"10-K", "10-Q"})
MAX_CITED = 10
FILING_HALF_LIFE_DAYS = 90.0
RANGE_DAYS = 252
"""Closes in the fundamental analyst's valuation range (about one year)."""
FRESH_REPORT_DAYS = 120.0
"""A periodic report accepted within this many days counts as current."""
SENTIMENT_FULL_COUNT = 30
"""Headlines at which the sentiment analyst's confidence reaches 1."""


class Signal(BaseModel):
    """One analyst's view of one name before one open."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    analyst: str
    """Analyst label: a rule role (`technical`, `news`, `filings`, `fundamental`,
    `sentiment`, `risk`) or `<role>:<agent>` for a model playing it."""
    symbol: str
    """The name."""
    score: float = Field(ge=-1.0, le=1.0)
    """Direction: -1 (negative) .. +1 (positive); 0 = no view."""
    confidence: float = Field(ge=0.0, le=1.0)
    """How much the analyst stands behind the score (0 = nothing to go on)."""
    cited: tuple[str, ...] = ()
    """Record ids the signal rests on (each must be visible at the decision instant)."""
    features: dict[str, float | str | None] = Field(default_factory=dict)
    """The numbers behind the score (rounded)."""


@dataclass(frozen=True)
class AnalystSettings:
    """What the analysts are tuned by (from the benchmark's options)."""

    momentum_days: int = 20
    news_lookback_days: int = 7
    news_delay_minutes: float = 0.0
    sentiment_lookback_days: int = 30
    risk_days: int = 60


Analyst = Callable[[MarketView, Sequence[str], AnalystSettings], list[Signal]]


def _r(x: float, digits: int = 6) -> float | None:
    return round(float(x), digits) if math.isfinite(x) else None


def _z(x: np.ndarray) -> np.ndarray:
    ok = np.isfinite(x)
    out = np.zeros_like(x)
    if ok.sum() >= 2 and np.std(x[ok]) > 0:
        out[ok] = (x[ok] - x[ok].mean()) / x[ok].std()
    return out


def technical(view: MarketView, pool: Sequence[str], s: AnalystSettings) -> list[Signal]:
    """Momentum and volatility z-scores across the pool, from adjusted closes."""
    cols = [view.column(name) for name in pool]
    prices = view.window("adj_close", s.momentum_days + 1)[:, cols]
    with np.errstate(invalid="ignore", divide="ignore"):
        rets = prices[1:] / prices[:-1] - 1
        mom = prices[-1] / prices[0] - 1 if len(prices) > 1 else np.full(len(cols), np.nan)
    finite = np.isfinite(rets)
    vol = np.array(
        [
            np.std(rets[finite[:, j], j]) if finite[:, j].sum() > 1 else np.nan
            for j in range(len(cols))
        ]
    )
    raw = _z(mom) - 0.5 * _z(vol)
    coverage = finite.mean(axis=0) if len(rets) else np.zeros(len(cols))
    return [
        Signal(
            analyst="technical",
            symbol=name,
            score=round(math.tanh(raw[j] / 2), 6),
            confidence=round(float(coverage[j]), 6),
            features={"momentum": _r(mom[j]), "volatility": _r(vol[j])},
        )
        for j, name in enumerate(pool)
    ]


def lexicon_hits(title: str) -> tuple[int, int]:
    """Positive and negative lexicon words in a headline (whole, lower-cased words)."""
    words = _WORD.findall(title.lower())
    return sum(w in POSITIVE for w in words), sum(w in NEGATIVE for w in words)


def _naming(recs: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of `recs` that name `name` (order kept)."""
    if recs.empty:
        return recs
    return recs[recs["symbols"].map(lambda syms: name in syms).to_numpy(bool)]


def news(view: MarketView, pool: Sequence[str], s: AnalystSettings) -> list[Signal]:
    """Count, recency and a headline word count of the visible recent news."""
    now = view.decision_time
    cutoff = now - pd.Timedelta(minutes=s.news_delay_minutes)
    visible = view.records(symbols=pool, kinds="news", lookback=f"{s.news_lookback_days}D")
    visible = visible[visible["ts_available"] <= cutoff]
    out = []
    for name in pool:
        recs = _naming(visible, name)
        n = len(recs)
        hits = [lexicon_hits(str(t)) for t in recs["title"]]
        pos, neg = sum(h[0] for h in hits), sum(h[1] for h in hits)
        hours = (now - recs["ts_available"].iloc[-1]).total_seconds() / 3600 if n else None
        out.append(
            Signal(
                analyst="news",
                symbol=name,
                score=round(math.tanh((pos - neg) / (n + 1)), 6),
                confidence=round(min(1.0, n / 10), 6),
                cited=tuple(recs["record_id"].iloc[-MAX_CITED:].tolist()),
                features={
                    "n_news": float(n),
                    "positive": float(pos),
                    "negative": float(neg),
                    "hours_since_latest": None if hours is None else _r(hours, 3),
                },
            )
        )
    return out


def filings(view: MarketView, pool: Sequence[str], s: AnalystSettings) -> list[Signal]:
    """Form and age of the latest visible filing (no direction)."""
    now = view.decision_time
    visible = view.records(symbols=pool, kinds="filing")
    out = []
    for name in pool:
        recs = _naming(visible, name)
        if recs.empty:
            out.append(Signal(analyst="filings", symbol=name, score=0.0, confidence=0.0))
            continue
        latest = recs.iloc[-1]
        days = (now - latest["ts_available"]).total_seconds() / 86400
        form = _FORM.search(str(latest["title"]))
        out.append(
            Signal(
                analyst="filings",
                symbol=name,
                score=0.0,
                confidence=round(math.exp(-days / FILING_HALF_LIFE_DAYS), 6),
                cited=(str(latest["record_id"]),),
                features={
                    "form": form.group(1) if form else "other",
                    "days_since": _r(days, 3),
                },
            )
        )
    return out


def _form(title: str) -> str:
    found = _FORM.search(title)
    return found.group(1) if found else "other"


def range_position(closes: np.ndarray) -> tuple[float, float, float, float]:
    """`(position, last, low, high)` of the last finite close in the range of the finite
    `closes` (position NaN with fewer than two or a flat range)."""
    ok = closes[np.isfinite(closes)]
    if len(ok) < 2 or ok.max() <= ok.min():
        return math.nan, math.nan, math.nan, math.nan
    last, low, high = float(ok[-1]), float(ok.min()), float(ok.max())
    return (last - low) / (high - low), last, low, high


def latest_periodic(recs: pd.DataFrame) -> pd.Series | None:
    """The newest 10-K or 10-Q among `recs` (by title), or None."""
    if recs.empty:
        return None
    periodic = recs[recs["title"].map(lambda t: _form(str(t)) in _PERIODIC).to_numpy(bool)]
    return None if periodic.empty else periodic.iloc[-1]


def fundamental(view: MarketView, pool: Sequence[str], s: AnalystSettings) -> list[Signal]:
    """Position in the year's price range (cheap or dear) and the latest periodic report."""
    now = view.decision_time
    closes = view.window("adj_close", RANGE_DAYS)[:, [view.column(n) for n in pool]]
    visible = view.records(symbols=pool, kinds="filing")
    out = []
    for j, name in enumerate(pool):
        position, last, low, high = range_position(closes[:, j])
        coverage = min(1.0, float(np.isfinite(closes[:, j]).sum()) / RANGE_DAYS)
        report = latest_periodic(_naming(visible, name))
        days = None if report is None else (now - report["ts_available"]).total_seconds() / 86400
        fresh = days is not None and days <= FRESH_REPORT_DAYS
        out.append(
            Signal(
                analyst="fundamental",
                symbol=name,
                score=0.0 if math.isnan(position) else round(1 - 2 * position, 6),
                confidence=round(coverage / 2 + (0.5 if fresh else 0.0), 6),
                cited=() if report is None else (str(report["record_id"]),),
                features={
                    "range_position": _r(position),
                    "off_high": _r(last / high - 1),
                    "above_low": _r(last / low - 1),
                    "form": None if report is None else _form(str(report["title"])),
                    "period_end": None
                    if report is None or pd.isna(report["ts_event"])
                    else f"{pd.Timestamp(report['ts_event']):%Y-%m-%d}",
                    "days_since_report": None if days is None else _r(days, 3),
                },
            )
        )
    return out


def headline_tone(title: str) -> int:
    """+1, -1 or 0: the sign of a headline's positive minus negative lexicon hits."""
    pos, neg = lexicon_hits(title)
    return (pos > neg) - (pos < neg)


def sentiment(view: MarketView, pool: Sequence[str], s: AnalystSettings) -> list[Signal]:
    """Share of positive minus negative headlines over the longer look-back."""
    now = view.decision_time
    cutoff = now - pd.Timedelta(minutes=s.news_delay_minutes)
    recent = now - pd.Timedelta(days=s.news_lookback_days)
    visible = view.records(symbols=pool, kinds="news", lookback=f"{s.sentiment_lookback_days}D")
    visible = visible[visible["ts_available"] <= cutoff]
    out = []
    for name in pool:
        recs = _naming(visible, name)
        tones = [headline_tone(str(t)) for t in recs["title"]]
        n, up, down = len(tones), tones.count(1), tones.count(-1)
        out.append(
            Signal(
                analyst="sentiment",
                symbol=name,
                score=round((up - down) / (n + 1), 6),
                confidence=round(min(1.0, n / SENTIMENT_FULL_COUNT), 6),
                cited=tuple(recs["record_id"].iloc[-MAX_CITED:].tolist()),
                features={
                    "n_news": float(n),
                    "n_recent": float((recs["ts_available"] > recent).sum()),
                    "positive_headlines": float(up),
                    "negative_headlines": float(down),
                },
            )
        )
    return out


def risk_measures(prices: np.ndarray, index: np.ndarray) -> tuple[float, float, float, float]:
    """`(max_drawdown, downside_vol, beta, coverage)` of one name's adjusted closes
    against the index's closes over the same rows (see the module docstring)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rets = prices[1:] / prices[:-1] - 1
        mkt = index[1:] / index[:-1] - 1
    ok = np.isfinite(rets)
    coverage = float(ok.mean()) if len(rets) else 0.0
    if ok.sum() < 2:
        return math.nan, math.nan, math.nan, coverage
    downside = float(np.sqrt(np.mean(np.minimum(rets[ok], 0.0) ** 2)))
    p = prices[np.isfinite(prices)]
    drawdown = float(np.min(p / np.maximum.accumulate(p) - 1))
    both = ok & np.isfinite(mkt)
    beta = math.nan
    if both.sum() >= 2 and np.var(mkt[both]) > 0:
        r, m = rets[both], mkt[both]
        beta = float(np.mean((r - r.mean()) * (m - m.mean())) / np.var(m))
    return drawdown, downside, beta, coverage


def risk(view: MarketView, pool: Sequence[str], s: AnalystSettings) -> list[Signal]:
    """Drawdown, downside volatility and beta, z-scored across the names: less risk ranks
    higher."""
    prices = view.window("adj_close", s.risk_days + 1)[:, [view.column(n) for n in pool]]
    index = view.index_window("close", s.risk_days + 1)
    measures = np.array([risk_measures(prices[:, j], index) for j in range(len(pool))])
    measures = measures.reshape(len(pool), 4)
    drawdown, downside, beta, coverage = measures.T
    raw = -(_z(downside) + _z(-drawdown) + _z(beta)) / 3
    return [
        Signal(
            analyst="risk",
            symbol=name,
            score=round(math.tanh(raw[j]), 6),
            confidence=round(float(coverage[j]), 6),
            features={
                "max_drawdown": _r(drawdown[j]),
                "downside_vol": _r(downside[j]),
                "beta": _r(beta[j]),
            },
        )
        for j, name in enumerate(pool)
    ]


ANALYST_FUNCTIONS: dict[str, Analyst] = {
    "technical": technical,
    "news": news,
    "filings": filings,
    "fundamental": fundamental,
    "sentiment": sentiment,
    "risk": risk,
}
"""The registered analyst roles by name."""


def combined_scores(
    signals: Sequence[Signal], pool: Sequence[str], weights: dict[str, float] | None = None
) -> dict[str, float]:
    """Per name, the weighted mean over analysts of `score x confidence` (0 without
    signals); `weights` maps an analyst label to its weight (None: uniform, 1 each)."""
    sums = dict.fromkeys(pool, 0.0)
    totals = dict.fromkeys(pool, 0.0)
    for sig in signals:
        w = 1.0 if weights is None else float(weights.get(sig.analyst, 0.0))
        if sig.symbol in sums:
            sums[sig.symbol] += w * sig.score * sig.confidence
            totals[sig.symbol] += w
    return {k: (sums[k] / totals[k] if totals[k] else 0.0) for k in pool}
