"""Importing evidence records: the real Alpaca news and EDGAR filings, the long format, the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.data.dataset import sha256_file
from tradebench.data.importers.records import RecordsImport, import_records
from tradebench.data.records import RECORD_COLUMNS, content_sha256
from tradebench.data.schema import RECORDS
from tradebench.errors import ConfigError, DataError

runner = CliRunner()


def _finding(manifest, kind: str):
    hits = [f for f in manifest.findings if f.kind == kind]
    return hits[0] if hits else None


def test_real_import_columns_stamps_and_checksum(us_records_dir: Path) -> None:
    ds = load_dataset(us_records_dir)
    entry = ds.manifest.files["records"]
    file = us_records_dir / "records.parquet"
    assert entry.path == "records.parquet" and entry.sha256 == sha256_file(file)
    assert entry.rows == 1446 + 1341 + 31 == len(ds.records)
    assert pq.read_schema(file).remove_metadata() == RECORDS
    assert tuple(ds.records.columns) == RECORD_COLUMNS
    for col in ("ts_event", "ts_available"):
        assert str(ds.records[col].dtype) == "datetime64[ns, UTC]"
    assert ds.records["record_id"].is_unique
    assert ds.records["ts_available"].is_monotonic_increasing
    assert ds.records["kind"].value_counts().to_dict() == {"news": 2787, "filing": 31}
    row = ds.records.iloc[100]
    assert row["sha256"] == content_sha256(row["title"], row["body"])
    sources = [s for s in ds.manifest.sources if s.startswith("records:")]
    assert sources == [
        "records:alpaca_news_COIN.parquet (news, delay 30 min)",
        "records:alpaca_news_NFLX.parquet (news, delay 30 min)",
        "records:filing_data.parquet (filings)",
    ]


def test_real_news_stamps_follow_the_source(us_records_dir: Path, text_dir: Path) -> None:
    records = load_dataset(us_records_dir).records
    news = records[records["kind"] == "news"]
    raw = pd.read_parquet(text_dir / "alpaca_news_COIN.parquet")
    coin = news[news["symbols"].map(lambda s: s == ("COIN",))]
    assert len(coin) == len(raw)
    # naive source stamps are UTC; ts_available is 30 minutes after publication
    published = raw["datetime"].dt.tz_localize("UTC").astype("datetime64[ns, UTC]")
    assert sorted(coin["ts_event"]) == sorted(published)
    assert (news["ts_available"] - news["ts_event"] == pd.Timedelta(minutes=30)).all()
    first = coin[coin["url"] == raw["url"].iloc[0]].iloc[0]
    assert first["title"] == raw["title"].iloc[0] and first["source"] == "benzinga"
    assert "<p>" not in first["body"] and first["body"].startswith("While it's only three days")


def test_real_filings_stamps(us_records_dir: Path, text_dir: Path) -> None:
    records = load_dataset(us_records_dir).records
    filings = records[records["kind"] == "filing"].set_index("url")
    raw = pd.read_parquet(text_dir / "filing_data.parquet").set_index("document_url")
    assert len(filings) == len(raw) == 31
    tsla = filings.loc[
        "https://www.sec.gov/Archives/edgar/data/1318605/000162828026026673/tsla-20260331.htm"
    ]
    assert tsla["ts_available"] == pd.Timestamp("2026-04-23 01:43:00", tz="UTC")
    assert tsla["ts_event"] == pd.Timestamp("2026-03-31", tz="UTC")
    assert tsla["title"] == "TSLA 10-Q for the period ended 2026-03-31"
    assert tsla["symbols"] == ("TSLA",) and tsla["source"] == "sec-edgar"
    # every acceptance stamp is the file's utc_timestamp, but for the one row whose two
    # stamps disagree: there the later reading (est_timestamp in New York time) is used
    utc = raw["utc_timestamp"].dt.tz_localize("UTC")
    same = filings["ts_available"] == utc.reindex(filings.index)
    assert int((~same).sum()) == 1
    msft = filings.loc[~same].iloc[0]
    assert msft["ts_available"] == pd.Timestamp("2024-07-30 20:00", tz="UTC")


def test_real_findings_are_counted_never_dropped(us_records_dir: Path) -> None:
    m = load_dataset(us_records_dir).manifest
    counts = {f.kind: f.count for f in m.findings if f.kind.startswith("record_")}
    # same title and body as an earlier article: 4 COIN + 11 NFLX (raw (title, content)
    # duplicates); 276 + 405 articles without text; 727 + 722 news and 15 filings
    # available after 2025-10-08 13:30 UTC (the last bar day's decision); one MSFT filing
    # whose utc and est stamps disagree
    assert counts == {
        "record_stamp_conflict": 1,
        "record_duplicate": 15,
        "record_empty_body": 681,
        "record_after_calendar": 1464,
    }
    dup = _finding(m, "record_duplicate")
    assert len(dup.examples) == 10 and all(" news-" in e for e in dup.examples)
    conflict = _finding(m, "record_stamp_conflict")
    assert conflict.examples == [
        "MSFT@2024-07-30T16:00:00Z (utc_timestamp) vs 2024-07-30T20:00:00Z (est_timestamp)"
    ]


def test_raw_duplicates_match_the_finding(text_dir: Path, us_records_dir: Path) -> None:
    expected = 0
    for name in ("alpaca_news_COIN.parquet", "alpaca_news_NFLX.parquet"):
        raw = pd.read_parquet(text_dir / name)
        expected += int(raw.duplicated(["title", "content"]).sum())
    assert _finding(load_dataset(us_records_dir).manifest, "record_duplicate").count == expected


def test_unknown_symbols_are_kept_and_listed(
    us_dataset_dir: Path, text_dir: Path, tmp_path: Path
) -> None:
    ds_dir = tmp_path / "us"
    shutil.copytree(us_dataset_dir, ds_dir)  # AAPL, TSLA, NVDA, MSFT; no COIN, NFLX, AMZN
    result = import_records(
        RecordsImport(
            dataset=ds_dir,
            news=(text_dir / "alpaca_news_COIN.parquet",),
            filings=(text_dir / "filing_data.parquet",),
        )
    )
    unknown = _finding(result.manifest, "record_unknown_symbol")
    assert unknown.count == 1446 + 6 + 6 + 6  # COIN news + COIN, NFLX, AMZN filings
    assert unknown.examples == ["AMZN (6 records)", "COIN (1452 records)", "NFLX (6 records)"]
    assert result.n_records == 1446 + 31
    assert len(load_dataset(ds_dir).records) == result.n_records


def _long_file(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "records.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


COLUMNS = ("record_id", "kind", "symbols", "ts_event", "ts_available", "source", "title", "body")
LONG_ROWS = [
    dict(zip(COLUMNS, row, strict=True))
    for row in (
        ("m1", "macro", "", "2024-01-05T13:30:00Z", "2024-01-05T13:30:00Z", "bls", "Jobs", "+216k"),
        ("n1", "news", "AAPL;MSFT", "2024-01-05 09:00", "2024-01-05 09:10", "wire", "Two", "x"),
        ("n2", "news", "AAPL", "2024-01-06T10:00:00Z", "2024-01-06T09:00:00Z", "w", "Early", "y"),
        ("n3", "news", "ZZZZ", "", "", "wire", "No stamp", ""),
        (
            "n4",
            "news",
            "AAPL;MSFT",
            "2024-01-08T09:00Z",
            "2024-01-08T09:00-05:00",
            "wire",
            "Two",
            "x",
        ),
    )
]


def test_long_format_findings_keep_every_row(us_dataset_dir: Path, tmp_path: Path) -> None:
    ds_dir = tmp_path / "us"
    shutil.copytree(us_dataset_dir, ds_dir)
    result = import_records(
        RecordsImport(
            dataset=ds_dir, long=(_long_file(tmp_path, LONG_ROWS),), naive_tz="America/New_York"
        )
    )
    notes = [f.detail for f in result.findings if f.kind == "record_note"]
    assert notes == [  # n1's two stamps had no zone
        "ts_event: 1 stamps without a zone read as America/New_York",
        "ts_available: 1 stamps without a zone read as America/New_York",
    ]
    counts = {f.kind: f.count for f in result.findings if f.kind != "record_note"}
    assert counts == {
        "record_missing_available": 1,  # n3
        "record_missing_event": 1,  # n3
        "record_available_before_event": 1,  # n2
        "record_duplicate": 1,  # n4 repeats n1's kind, symbols, title and body
        "record_unknown_symbol": 1,  # ZZZZ
        "record_empty_body": 1,  # n3
    }
    missing = _finding(result.manifest, "record_missing_available")
    assert missing.examples == ["ZZZZ@- n3"] and "never visible" in missing.detail
    records = load_dataset(ds_dir).records.set_index("record_id")
    assert list(records.index) == ["m1", "n1", "n2", "n4", "n3"]  # by ts_available, NaT last
    assert records.loc["n1", "ts_available"] == pd.Timestamp("2024-01-05 14:10", tz="UTC")
    assert records.loc["n4", "ts_available"] == pd.Timestamp("2024-01-08 14:00", tz="UTC")
    assert records.loc["m1", "symbols"] == () and records.loc["n1", "symbols"] == ("AAPL", "MSFT")
    assert pd.isna(records.loc["n3", "ts_available"]) and pd.isna(records.loc["n3", "url"])


def test_long_format_repeated_ids_are_refused(us_dataset_dir: Path, tmp_path: Path) -> None:
    ds_dir = tmp_path / "us"
    shutil.copytree(us_dataset_dir, ds_dir)
    rows = [dict(LONG_ROWS[0]), dict(LONG_ROWS[1], record_id="m1")]
    with pytest.raises(DataError, match=r"record ids repeat, e\.g\. \['m1'\]"):
        import_records(RecordsImport(dataset=ds_dir, long=(_long_file(tmp_path, rows),)))
    assert "records" not in load_dataset(ds_dir).manifest.files


def test_long_format_needs_ts_available(us_dataset_dir: Path, tmp_path: Path) -> None:
    rows = [{k: v for k, v in LONG_ROWS[0].items() if k != "ts_available"}]
    with pytest.raises(DataError, match=r"lacks required columns \['ts_available'\]"):
        import_records(RecordsImport(dataset=us_dataset_dir, long=(_long_file(tmp_path, rows),)))


def test_reimport_replaces_records_and_their_findings(us_dataset_dir: Path, tmp_path: Path) -> None:
    ds_dir = tmp_path / "us"
    shutil.copytree(us_dataset_dir, ds_dir)
    before = load_dataset(ds_dir).manifest
    import_records(RecordsImport(dataset=ds_dir, long=(_long_file(tmp_path, LONG_ROWS),)))
    after = import_records(
        RecordsImport(dataset=ds_dir, long=(_long_file(tmp_path, LONG_ROWS[:1]),))
    ).manifest
    assert after.files["records"].rows == 1
    assert [f.kind for f in after.findings if f.kind.startswith("record_")] == []
    assert after.sources == [*before.sources, "records:records.csv (long)"]
    assert after.files["bars"] == before.files["bars"]


def test_import_needs_a_source_and_a_valid_delay(us_dataset_dir: Path, text_dir: Path) -> None:
    with pytest.raises(ConfigError, match="no records to import"):
        import_records(RecordsImport(dataset=us_dataset_dir))
    with pytest.raises(ConfigError, match="negative"):
        import_records(
            RecordsImport(
                dataset=us_dataset_dir,
                news=(text_dir / "alpaca_news_COIN.parquet",),
                delay=pd.Timedelta(minutes=-1),
            )
        )


def test_cli_import_records(us_dataset_dir: Path, text_dir: Path, tmp_path: Path) -> None:
    ds_dir = tmp_path / "us"
    shutil.copytree(us_dataset_dir, ds_dir)
    args = ["data", "import-records", str(ds_dir), "--news"]
    args += [str(text_dir / "alpaca_news_NFLX.parquet"), "--delay-minutes", "45"]
    result = runner.invoke(app, [*args, "--filings", str(text_dir / "filing_data.parquet")])
    assert result.exit_code == 0, result.output
    assert "records.parquet (1,372: filing 31, news 1,341)" in result.output
    assert "record_unknown_symbol" in result.output and "records:1,372" in result.output
    records = load_dataset(ds_dir).records
    news = records[records["kind"] == "news"]
    assert (news["ts_available"] - news["ts_event"] == pd.Timedelta(minutes=45)).all()


def test_cli_import_records_errors_are_one_line(us_dataset_dir: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["data", "import-records", str(us_dataset_dir)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "error: no records to import: give --news, --filings or --long files" in result.output
    result = runner.invoke(
        app, ["data", "import-records", str(us_dataset_dir), "--long", str(tmp_path / "no.csv")]
    )
    assert result.exit_code == 1 and "no.csv does not exist" in result.output


def test_cli_import_records_help_teaches() -> None:
    result = runner.invoke(app, ["data", "import-records", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for needle in ("--news", "--filings", "--long", "--delay-minutes", "ts_available", "09:30"):
        assert needle in text


def test_long_format_without_ids_and_with_empty_urls(us_dataset_dir: Path, tmp_path: Path) -> None:
    """Ids are generated from the content; an empty url cell (NaN in a CSV) is no url."""
    ds_dir = tmp_path / "us"
    shutil.copytree(us_dataset_dir, ds_dir)
    rows = [
        {k: v for k, v in dict(row, url="https://example.org/a" if i else "").items()}
        for i, row in enumerate(LONG_ROWS[:2])
    ]
    for row in rows:
        row.pop("record_id")
    result = import_records(RecordsImport(dataset=ds_dir, long=(_long_file(tmp_path, rows),)))
    assert result.n_records == 2
    ids = list(load_dataset(ds_dir).records["record_id"])
    assert len(set(ids)) == 2 and all(i.startswith(("macro-", "news-")) for i in ids)
