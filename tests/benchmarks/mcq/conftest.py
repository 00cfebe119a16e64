"""Fixtures for the MCQ benchmark: AAPL 2020-2024 bars from the shared US file, one build."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest

from tradebench.benchmarks.mcq.bars import resolve
from tradebench.benchmarks.mcq.build.builder import BuildResult, BuildSpec, build
from tradebench.benchmarks.mcq.config import DataRef

US_FILE = Path("us") / "sp500_daily_adj_2005_2025.parquet"


def aapl_ref(shared: Path, symbol: str = "AAPL") -> DataRef:
    """The default window of the benchmark on the shared long Parquet file."""
    return DataRef(
        kind="long_parquet",
        path=str(shared / US_FILE),
        symbol=symbol,
        start=dt.date(2020, 1, 1),
        end=dt.date(2024, 1, 1),
    )


@pytest.fixture(scope="session")
def make_ref(shared_data: Path):
    """Factory: the default window for any symbol of the shared US file."""
    return lambda symbol="AAPL": aapl_ref(shared_data, symbol)


@pytest.fixture(scope="session")
def aapl(shared_data: Path) -> tuple[DataRef, pd.DataFrame]:
    """(DataRef with digest, bars) for AAPL 2020-01-01..2024-01-01."""
    return resolve(aapl_ref(shared_data))


@pytest.fixture(scope="session")
def base_pool(aapl: tuple[DataRef, pd.DataFrame]) -> BuildResult:
    """The full --all-templates build, seed 42."""
    ref, bars = aapl
    return build(BuildSpec(data=ref, seed=42), bars)
