"""Datasets with evidence records, built from the real shared files once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

US_RECORD_SYMBOLS = ("COIN", "NFLX", "TSLA", "AMZN", "MSFT")


@pytest.fixture(scope="session")
def text_dir(shared_data: Path) -> Path:
    """`shared/data/us/text`: the Alpaca news and EDGAR filings files."""
    path = shared_data / "us" / "text"
    if not (path / "alpaca_news_COIN.parquet").exists():
        pytest.skip(f"real text data not found under {path}")
    return path


@pytest.fixture(scope="session")
def us_records_dir(
    shared_data: Path, text_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """COIN, NFLX, TSLA, AMZN, MSFT bars 2024-06 .. 2025-10 (SPY index) plus the real COIN
    and NFLX news (30-minute delay) and the EDGAR filings as records. Read-only: copy it
    before changing anything."""
    from tradebench.data.importers.long import LongImport, import_long
    from tradebench.data.importers.records import RecordsImport, import_records

    out = tmp_path_factory.mktemp("us_records") / "us"
    import_long(
        LongImport(
            source=shared_data / "us" / "sp500_daily_adj_2005_2025.parquet",
            out=out,
            market="us",
            index_symbol="SPY",
            symbols=US_RECORD_SYMBOLS,
            start="2024-06-01",
        )
    )
    import_records(
        RecordsImport(
            dataset=out,
            news=(text_dir / "alpaca_news_COIN.parquet", text_dir / "alpaca_news_NFLX.parquet"),
            filings=(text_dir / "filing_data.parquet",),
        )
    )
    return out
