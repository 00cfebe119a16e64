"""Captures: what the analysts see at T, canonical bytes, and citation violations."""

from __future__ import annotations

from pathlib import Path

from tradebench.benchmarks.mandate.analysts import AnalystSettings, Signal
from tradebench.benchmarks.mandate.capture import (
    CaptureStore,
    build_capture,
    canonical_bytes,
    check_citations,
)
from tradebench.data.dataset import load_dataset
from tradebench.view import MarketView

POOL = ("AMZN", "COIN", "MSFT", "NFLX", "TSLA")


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
    capture = build_capture(view, POOL, ("technical", "news", "filings"), AnalystSettings())
    assert capture.violations == []
    cited = {rid for s in capture.signals for rid in s.cited}
    assert cited and all(view.record(rid).ts_available <= view.decision_time for rid in cited)
    news = {s.symbol: s for s in capture.signals if s.analyst == "news"}
    assert news["COIN"].confidence > 0 and news["AMZN"].confidence == 0  # no AMZN news
    store = CaptureStore(tmp_path, POOL, ("technical", "news", "filings"), AnalystSettings())
    first = store.load(view)
    assert first.data == canonical_bytes(capture)
    again = store.load(MarketView(ds, "2025-06-02"))
    assert again.data == first.data and again.sha256 == first.sha256
