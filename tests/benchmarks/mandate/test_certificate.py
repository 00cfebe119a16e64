"""The contamination certificate on real data: PASS, UNKNOWN by cutoff, FAIL by audit."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.benchmarks.mandate.certificate import (
    EpisodeCertificate,
    EpisodeSubject,
    Showing,
    certify,
    combine,
    cutoff_reason,
    find_dates,
    provenance,
    read_showings,
)
from tradebench.cli import app
from tradebench.data.clock import decision_time
from tradebench.data.dataset import load_dataset
from tradebench.data.importers.records import RecordsImport, import_records
from tradebench.data.records import Record
from tradebench.errors import ConfigError
from tradebench.llm.loopback import LoopbackServer
from tradebench.view import MarketView

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

WINDOW = "20250602-20250804"
PLANT_DAY = "2025-06-03"
NEWS_ID = "planted-news-coin"
FILING_ID = "planted-filing-msft"


def _cert(run_dir: Path, episode: str) -> EpisodeCertificate:
    path = run_dir / "episodes" / episode / "certificate.json"
    return EpisodeCertificate.model_validate_json(path.read_text())


@pytest.fixture(scope="module")
def cutoff_run(mandate_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rule constructor and three models (old cutoff, none, within the margin)."""
    out = tmp_path_factory.mktemp("certificate") / "run"
    with LoopbackServer(script=[]) as server:
        spec = example_spec(mandate_dataset, pool_sizes=[5], max_steps=3, pool="random")
        model = {"provider": "openai", "base_url": server.openai_url}
        spec["agents"] = [
            {"name": "ew", "baseline": "equal_weight"},
            {"name": "old", "model": "old", "knowledge_cutoff": "2023-01-01", **model},
            {"name": "anon", "model": "anon", **model},
            {"name": "recent", "model": "recent", "knowledge_cutoff": "2025-01-15", **model},
        ]
        spec["modes"] = ["daily"]
        run(spec, out)
    return out


def test_clean_episodes_pass_with_an_old_cutoff(cutoff_run: Path) -> None:
    for episode in (f"ew_daily_k5_s0_{WINDOW}", f"old_daily_k5_s0_{WINDOW}"):
        cert = _cert(cutoff_run, episode)
        assert cert.verdict == "PASS" and cert.reasons == [], cert.reasons
        assert cert.captures_read == 3 and cert.records_shown > 0
    assert _cert(cutoff_run, f"old_daily_k5_s0_{WINDOW}").knowledge_cutoff == "2023-01-01"


def test_undeclared_or_recent_cutoff_is_unknown(cutoff_run: Path) -> None:
    anon = _cert(cutoff_run, f"anon_daily_k5_s0_{WINDOW}")
    assert anon.verdict == "UNKNOWN"
    assert [r.rule for r in anon.reasons] == ["cutoff"]
    assert "no knowledge cutoff declared for model 'anon'" in anon.reasons[0].evidence
    recent = _cert(cutoff_run, f"recent_daily_k5_s0_{WINDOW}")
    assert recent.verdict == "UNKNOWN" and recent.knowledge_cutoff == "2025-01-15"
    assert "2025-07-15 is not before the window start 2025-06-02" in recent.reasons[0].evidence


def test_one_cutoff_declaration_serves_certificate_and_leaderboard(cutoff_run: Path) -> None:
    from tradebench.leaderboard.data import board_episodes

    board = board_episodes([cutoff_run]).drop_duplicates("agent").set_index("agent")
    for agent in ("old", "recent", "anon"):
        cert = _cert(cutoff_run, f"{agent}_daily_k5_s0_{WINDOW}")
        on_board = board.loc[agent, "knowledge_cutoff"]
        assert (None if pd.isna(on_board) else str(on_board)) == cert.knowledge_cutoff


def test_run_table_summary_and_report(cutoff_run: Path) -> None:
    table = pd.read_parquet(cutoff_run / "certificate.parquet").set_index("agent")
    assert table["verdict"].to_dict() == {
        "anon": "UNKNOWN",
        "ew": "PASS",
        "old": "PASS",
        "recent": "UNKNOWN",
        "(run)": "UNKNOWN",
    }
    assert table.loc["(run)", "episodes"] == 4 and table.loc["(run)", "unknown"] == 2
    summary = pd.read_parquet(cutoff_run / "summary.parquet").set_index("agent")
    assert summary.loc["anon", "certificate"] == "UNKNOWN"
    assert summary.loc["ew", "records_shown"] > 0
    result = CliRunner().invoke(app, ["report", str(cutoff_run)])
    assert result.exit_code == 0, result.output
    page = (cutoff_run / "report.html").read_text()
    assert "Mandate: contamination certificate" in page and "memorised" in page


def test_cutoff_margin_edges() -> None:
    start = date(2025, 6, 2)
    assert cutoff_reason(True, date(2024, 12, 1), 6, start) is None
    assert cutoff_reason(True, date(2024, 12, 2), 6, start) is not None
    assert cutoff_reason(True, date(2025, 5, 1), 0, start) is None
    assert cutoff_reason(False, None, 6, start) is None  # rule agents have no cutoff


def test_cutoff_for_a_rule_agent_is_refused(mandate_dataset: Path, tmp_path: Path) -> None:
    spec = example_spec(mandate_dataset, pool_sizes=[5])
    spec["agents"] = [{"name": "ew", "baseline": "equal_weight", "knowledge_cutoff": "2023-01-01"}]
    with pytest.raises(ConfigError, match="rule agent"):
        run(spec, tmp_path / "run")


def test_the_old_options_place_for_cutoffs_is_one_clear_error(
    mandate_dataset: Path, tmp_path: Path
) -> None:
    spec = example_spec(mandate_dataset, knowledge_cutoffs={"llm": "2023-01-01"})
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps(spec, default=str))
    result = CliRunner().invoke(app, ["run", str(path), "-o", str(tmp_path / "run")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert result.output.startswith("error:") and "knowledge_cutoff" in result.output


def test_find_dates_reads_the_documented_forms() -> None:
    text = (
        "Shares rose on 2025-07-31. On July 30, 2025 it said; by 3rd June 2025 and "
        "Jul. 4th 2025. Q3 2025 revenue. As of march 31, december 31, 2025 2024."
    )
    found = find_dates(text, date(2025, 6, 3))
    dated = [m.day.isoformat() for m in found if not m.yearless]
    assert dated == ["2025-07-31", "2025-07-30", "2025-06-03", "2025-07-04", "2025-09-30"]
    # the table header's days are read without a year, nearest the record's own date
    assert [m.text for m in found if m.yearless] == ["march 31", "december 31"]


@pytest.fixture(scope="module")
def planted_dataset(
    mandate_dataset: Path, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The real dataset plus a COIN news item stamped one minute before the decision time
    of 2025-06-03 that reports a later event, and an MSFT 10-Q accepted before its period
    ends (through the long-records importer)."""
    root = tmp_path_factory.mktemp("planted")
    out = root / "us-2025"
    shutil.copytree(mandate_dataset, out)
    stamp = decision_time(PLANT_DAY, "us") - pd.Timedelta(minutes=1)
    planted = pd.DataFrame(
        [
            {
                "record_id": NEWS_ID,
                "kind": "news",
                "symbols": "COIN",
                "ts_event": stamp.isoformat(),
                "ts_available": stamp.isoformat(),
                "source": "planted",
                "url": "https://example.invalid/coin",
                "title": "Coinbase results",
                "body": "On July 31, 2025, Coinbase reported second-quarter revenue of $1.5 "
                "billion, and the shares rose 9% in after-hours trading.",
            },
            {
                "record_id": FILING_ID,
                "kind": "filing",
                "symbols": "MSFT",
                "ts_event": "2025-09-30T00:00:00Z",
                "ts_available": "2025-06-04T12:00:00Z",
                "source": "planted",
                "title": "MSFT 10-Q quarterly report",
                "body": "quarterly report on form 10-q.",
                "url": "https://example.invalid/msft",
            },
        ]
    )
    long_file = root / "planted.csv"
    planted.to_csv(long_file, index=False)
    shared = shared_data / "us" / "text"
    import_records(
        RecordsImport(
            dataset=out,
            news=(shared / "alpaca_news_COIN.parquet", shared / "alpaca_news_NFLX.parquet"),
            filings=(shared / "filing_data.parquet",),
            long=(long_file,),
        )
    )
    return out


def test_planted_later_event_and_early_filing_fail(planted_dataset: Path, tmp_path: Path) -> None:
    spec = example_spec(planted_dataset, pool_sizes=[5], max_steps=5, pool="random")
    spec["agents"] = [{"name": "ew", "baseline": "equal_weight"}]
    spec["modes"] = ["daily"]
    run(spec, tmp_path / "run")
    cert = _cert(tmp_path / "run", f"ew_daily_k5_s0_{WINDOW}")
    assert cert.verdict == "FAIL"
    news = [r for r in cert.reasons if r.record_id == NEWS_ID]
    assert [r.rule for r in news] == ["provenance_date"]
    assert "2025-07-31" in news[0].evidence and "July 31, 2025" in news[0].evidence
    filing = [r for r in cert.reasons if r.record_id == FILING_ID]
    assert [r.rule for r in filing] == ["filing_period"]
    assert "2025-09-30" in filing[0].evidence
    assert {r.record_id for r in cert.reasons} == {NEWS_ID, FILING_ID}  # the real data is clean
    table = pd.read_parquet(tmp_path / "run/certificate.parquet").set_index("agent")
    assert table.loc["(run)", "verdict"] == "FAIL" and table.loc["ew", "failed_records"] == 2
    reasons = json.loads(
        pd.read_parquet(tmp_path / "run/summary.parquet")
        .set_index("agent")
        .loc["ew", "certificate_reasons"]
    )
    assert any(NEWS_ID in r and "2025-07-31" in r for r in reasons)


def test_gate_and_unknown_ids_fail(mandate_dataset: Path) -> None:
    ds = load_dataset(mandate_dataset)
    later = MarketView(ds, "2025-07-15").records(symbols="COIN", kinds="news").iloc[-1]
    subject = EpisodeSubject("e", "ew", date(2025, 6, 2), {}, 6)
    shown = [Showing("2025-06-02", str(later["record_id"])), Showing("2025-06-02", "news-nope")]
    cert = certify(ds, subject, shown)
    assert cert.verdict == "FAIL"
    assert [(r.rule, r.record_id) for r in cert.reasons] == [
        ("gate", later["record_id"]),
        ("unknown_record", "news-nope"),
    ]
    assert "after the decision time 2025-06-02T13:30:00+00:00" in cert.reasons[0].evidence
    visible = [Showing("2025-07-15", str(later["record_id"]))]
    assert certify(ds, subject, visible).verdict == "PASS"


def test_a_changed_capture_fails(cutoff_run: Path) -> None:
    folder = next((cutoff_run / "captures").iterdir())
    first = sorted(folder.glob("*.json"))[0]
    data = first.read_bytes()
    steps = [(first.stem, "0" * 64)]
    shown, bad, read = read_showings(folder, steps)
    assert shown == [] and read == 1 and [r.rule for r in bad] == ["capture_hash"]
    assert first.read_bytes() == data


def _filing(title: str, period: str, accepted: str) -> Record:
    return Record(
        record_id="f",
        kind="filing",
        symbols=("MSFT",),
        ts_event=pd.Timestamp(period, tz="UTC").to_pydatetime(),
        ts_available=pd.Timestamp(accepted, tz="UTC").to_pydatetime(),
        source="sec-edgar",
        title=title,
        body="",
        url=None,
        sha256="",
    )


def test_filing_period_edges_and_verdict_order() -> None:
    assert provenance(_filing("MSFT 10-Q", "2025-06-30", "2025-06-30T23:59:00")).reasons
    assert not provenance(_filing("MSFT 10-Q", "2025-06-30", "2025-07-01T00:00:00")).reasons
    assert not provenance(_filing("MSFT 8-K", "2025-06-30", "2025-06-30T20:00:00")).reasons
    assert provenance(_filing("MSFT 8-K", "2025-06-30", "2025-06-29T20:00:00")).reasons
    assert combine(["PASS", "UNKNOWN", "FAIL", "PASS"]) == "FAIL"
    assert combine(["PASS", "UNKNOWN"]) == "UNKNOWN" and combine([]) == "PASS"
