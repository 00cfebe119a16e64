"""Captures: what the analysts see at T, canonical bytes, and citation violations."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tradebench.benchmarks.mandate.analysts import ANALYST_FUNCTIONS, AnalystSettings, Signal
from tradebench.benchmarks.mandate.capture import (
    CaptureStore,
    build_capture,
    canonical_bytes,
    check_citations,
)
from tradebench.benchmarks.mandate.sources import RuleAnalyst
from tradebench.data.dataset import load_dataset
from tradebench.view import MarketView

POOL = ("AMZN", "COIN", "MSFT", "NFLX", "TSLA")
RULES = tuple(RuleAnalyst(name, AnalystSettings()) for name in ("technical", "news", "filings"))


def test_cited_ids_not_visible_at_t_are_violations(mandate_dataset: Path) -> None:
    ds = load_dataset(mandate_dataset)
    early, late = MarketView(ds, "2025-06-02"), MarketView(ds, "2025-07-15")
    future = late.records(symbols="COIN", kinds="news").iloc[-1]["record_id"]
    past = early.records(symbols="COIN", kinds="news").iloc[-1]["record_id"]
    signals = [
        Signal(analyst="news", symbol="COIN", score=0.1, confidence=0.5, cited=(past, future))
    ]
    found = check_citations(early, signals)
    assert [v.record_id for v in found] == [future]
    assert check_citations(late, signals) == []


def test_capture_cites_only_visible_records_and_is_canonical(
    mandate_dataset: Path, tmp_path: Path
) -> None:
    ds = load_dataset(mandate_dataset)
    view = MarketView(ds, "2025-06-02")
    capture = asyncio.run(build_capture(view, POOL, RULES))
    assert capture.violations == []
    cited = {rid for s in capture.signals for rid in s.cited}
    assert cited and all(view.record(rid).ts_available <= view.decision_time for rid in cited)
    news = {s.symbol: s for s in capture.signals if s.analyst == "news"}
    assert news["COIN"].confidence > 0 and news["AMZN"].confidence == 0  # no AMZN news
    store = CaptureStore(tmp_path, POOL, RULES)
    first = asyncio.run(store.load(view))
    assert first.data == canonical_bytes(capture)
    again = asyncio.run(store.load(MarketView(ds, "2025-06-02")))
    assert again.data == first.data and again.sha256 == first.sha256


def test_news_and_filings_analysts_match_a_per_name_query(mandate_dataset: Path) -> None:
    """The analysts query the view once for the whole list; the oracle asks per name."""
    ds = load_dataset(mandate_dataset)
    view = MarketView(ds, "2025-07-15")
    s = AnalystSettings()
    for sig in ANALYST_FUNCTIONS["news"](view, POOL, s):
        own = view.records(symbols=sig.symbol, kinds="news", lookback="7D")
        assert sig.features["n_news"] == len(own)
        assert sig.cited == tuple(own["record_id"].iloc[-10:])
    for sig in ANALYST_FUNCTIONS["filings"](view, POOL, s):
        own = view.records(symbols=sig.symbol, kinds="filing", limit=1)
        assert sig.cited == tuple(own["record_id"])
