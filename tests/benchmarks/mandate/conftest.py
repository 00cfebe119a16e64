"""The real S&P 500 data of 2024-09 .. 2025-10 with news and filings, imported once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from tradebench.benchmarks import run_spec
from tradebench.runs.spec import RunSpec

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "mandate_us_2025.yaml"


@pytest.fixture(scope="session")
def mandate_dataset(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every S&P 500 file symbol with membership, sectors, SPY as a tradable index, and the
    COIN/NFLX news and the EDGAR filings as records."""
    from tradebench.data.importers.long import LongImport, import_long
    from tradebench.data.importers.records import RecordsImport, import_records

    bars = shared_data / "us" / "sp500_daily_adj_2005_2025.parquet"
    text = shared_data / "us" / "text"
    out = tmp_path_factory.mktemp("mandate") / "us-2025"
    import_long(
        LongImport(
            source=bars,
            out=out,
            market="us",
            index_file=bars,
            index_symbol="SPY",
            membership_file=shared_data / "universe" / "sp500_membership.csv",
            sectors_file=shared_data / "universe" / "sp500_current_sectors.csv",
            start="2024-09-01",
        )
    )
    import_records(
        RecordsImport(
            dataset=out,
            news=(text / "alpaca_news_COIN.parquet", text / "alpaca_news_NFLX.parquet"),
            filings=(text / "filing_data.parquet",),
        )
    )
    return out


def example_spec(dataset: Path, llm: bool = False, **options: Any) -> dict[str, Any]:
    """The shipped example on `dataset`, without its model agent unless `llm`, with
    `options` overriding its options."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["dataset"] = str(dataset)
    if not llm:
        spec["agents"] = [a for a in spec["agents"] if "provider" not in a]
    spec["options"] = {**spec["options"], **options}
    return spec


def run(spec: dict[str, Any], out: Path) -> Path:
    """`run_spec` of a spec dict into `out`; returns the summary path."""
    return asyncio.run(run_spec(RunSpec.model_validate(spec), out))
