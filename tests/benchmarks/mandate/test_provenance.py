"""The certificate against planted records: a later event in ten spellings of its date,
and the gate with records on both sides of the decision instant of one day."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.benchmarks.mandate.certificate import (
    EpisodeCertificate,
    EpisodeSubject,
    Showing,
    certify,
)
from tradebench.data.clock import decision_time
from tradebench.data.dataset import load_dataset
from tradebench.data.importers.records import RecordsImport, import_records

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

PLANT_DAY = "2025-06-03"
GATE_DAY = "2025-06-04"
REPORT = "Coinbase reported revenue of $1.5 billion and the shares rose 9% after hours"
SPELLINGS = {
    "iso": f"On 2025-07-31, {REPORT}.",
    "month-day-year": f"On July 31, 2025, {REPORT}.",
    "us-numeric": f"On 7/31/2025, {REPORT}.",
    "eu-numeric": f"On 31.07.2025, {REPORT}.",
    "day-month-year": f"On 31 July 2025, {REPORT}.",
    "year-first-slash": f"On 2025/07/31, {REPORT}.",
    "quarter-words": f"For the second quarter of 2025, {REPORT}.",
    "quarter-code": f"In 2Q25, {REPORT}.",
    "no-year": f"On Thursday, July 31, {REPORT}.",
    "undated": f"{REPORT}.",
}
"""A record stamped before the decision time of 2025-06-03 reporting an event of July 31
(or of the quarter ending June 30), in ten spellings."""
DATED = [k for k in SPELLINGS if k not in ("no-year", "undated")]
GATE = {"gate-before": -1, "gate-after": 1}


def _rid(key: str) -> str:
    return f"planted-{key}"


@pytest.fixture(scope="module")
def planted(mandate_dataset: Path, shared_data: Path, tmp_path_factory: pytest.TempPathFactory):
    """The real dataset plus the ten spellings (five on COIN, five on NFLX, a minute apart
    before the decision time of 2025-06-03) and three COIN items around the decision time
    of 2025-06-04: a second before, a second after, and at 20:30 UTC that day."""
    root = tmp_path_factory.mktemp("provenance")
    out = root / "us-2025"
    shutil.copytree(mandate_dataset, out)
    rows = []
    for i, (key, body) in enumerate(SPELLINGS.items()):
        stamp = decision_time(PLANT_DAY, "us") - pd.Timedelta(minutes=10 - i // 2)
        rows.append(_row(_rid(key), "COIN" if i % 2 == 0 else "NFLX", stamp, body))
    gate = decision_time(GATE_DAY, "us")
    for key, seconds in GATE.items():
        rows.append(_row(key, "COIN", gate + pd.Timedelta(seconds=seconds), "Shares moved."))
    rows.append(_row("gate-evening", "COIN", pd.Timestamp(f"{GATE_DAY}T20:30:00Z"), "Moved."))
    long_file = root / "planted.csv"
    pd.DataFrame(rows).to_csv(long_file, index=False)
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


def _row(rid: str, symbol: str, stamp: pd.Timestamp, body: str) -> dict:
    return {
        "record_id": rid,
        "kind": "news",
        "symbols": symbol,
        "ts_event": stamp.isoformat(),
        "ts_available": stamp.isoformat(),
        "source": "planted",
        "url": f"https://example.invalid/{rid}",
        "title": "Coinbase results",
        "body": body,
    }


SUBJECT = EpisodeSubject("e", "ew", date(2025, 6, 2), {}, 6)


def test_ten_spellings_fail_or_say_unknown(planted: Path) -> None:
    ds = load_dataset(planted)
    for key in DATED:
        cert = certify(ds, SUBJECT, [Showing(PLANT_DAY, _rid(key))])
        assert cert.verdict == "FAIL", key
        assert [r.rule for r in cert.reasons] == ["provenance_date"], key
        assert cert.text_scan == "FAIL"
    quarter = certify(ds, SUBJECT, [Showing(PLANT_DAY, _rid("quarter-words"))])
    assert "2025-06-30" in quarter.reasons[0].evidence
    assert (
        "2025-07-31"
        in certify(ds, SUBJECT, [Showing(PLANT_DAY, _rid("eu-numeric"))]).reasons[0].evidence
    )
    # no year: read as the nearest July 31 (2025), which the scan cannot confirm: UNKNOWN
    no_year = certify(ds, SUBJECT, [Showing(PLANT_DAY, _rid("no-year"))])
    assert no_year.text_scan == "UNKNOWN" and no_year.unresolved_records == 1
    assert no_year.verdict == "PASS"  # 7% of the shipped news has one: stated, not the verdict
    assert [r.rule for r in no_year.scan_unknown] == ["provenance_unresolved"]
    assert "2025-07-31" in no_year.scan_unknown[0].evidence
    # no date at all: the scan cannot read it, and the certificate says so
    undated = certify(ds, SUBJECT, [Showing(PLANT_DAY, _rid("undated"))])
    assert undated.text_scan == "UNKNOWN" and undated.undated_records == 1
    assert undated.verdict == "PASS"  # an undated record is stated (scan_limits), not failed
    assert "without any date" in undated.scan_limits


def test_gate_compares_instants_not_days(planted: Path) -> None:
    """Same day, both sides of the decision instant (09:30 New York = 13:30 UTC): only the
    record a second before it may be shown that day."""
    ds = load_dataset(planted)
    cert = certify(ds, SUBJECT, [Showing(GATE_DAY, r) for r in (*GATE, "gate-evening")])
    assert [(r.rule, r.record_id) for r in cert.reasons if r.rule == "gate"] == [
        ("gate", "gate-after"),
        ("gate", "gate-evening"),
    ]
    assert certify(ds, SUBJECT, [Showing("2025-06-05", "gate-evening")]).verdict != "FAIL"


def test_a_run_shows_the_planted_records_and_fails(planted: Path, tmp_path: Path) -> None:
    """Through a run: the news analyst cites the planted items on 2025-06-03 (they are
    visible), the gate's after-instant items only from 2025-06-05, and the episode's
    certificate fails on every dated spelling and says UNKNOWN about what it cannot read."""
    spec = example_spec(planted, pool_sizes=[5], max_steps=4, pool="random")
    spec["agents"] = [{"name": "ew", "baseline": "equal_weight"}]
    spec["modes"] = ["daily"]
    run(spec, tmp_path / "run")
    folder = tmp_path / "run/episodes/ew_daily_k5_s0_20250602-20250804"
    cert = EpisodeCertificate.model_validate_json((folder / "certificate.json").read_text())
    failed = {r.record_id for r in cert.reasons if r.rule == "provenance_date"}
    assert failed == {_rid(k) for k in DATED}
    assert not [r for r in cert.reasons if r.rule == "gate"]  # the view never showed them early
    assert cert.verdict == "FAIL" and cert.text_scan == "FAIL"
    assert _rid("no-year") in {r.record_id for r in cert.scan_unknown}
    assert cert.undated_records >= 1
    captures = sorted((tmp_path / "run/captures").iterdir())[0]
    cited = {
        day: {
            rid
            for sig in pd.read_json(captures / f"{day}.json", typ="series")["signals"]
            for rid in sig["cited"]
        }
        for day in ("2025-06-03", "2025-06-04", "2025-06-05")
    }
    assert {_rid(k) for k in SPELLINGS} <= cited["2025-06-03"]
    assert "gate-before" in cited["2025-06-04"] and "gate-after" not in cited["2025-06-04"]
    assert {"gate-after", "gate-evening"} <= cited["2025-06-05"]
