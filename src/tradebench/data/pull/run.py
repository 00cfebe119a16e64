"""`pull_dataset`: fetch from the chosen library, convert, write the dataset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tradebench.data.pull.akshare_source import convert_akshare, fetch_akshare
from tradebench.data.pull.baostock_source import convert_baostock, fetch_baostock
from tradebench.data.pull.common import SOURCES, Converted, PullRequest, write_converted
from tradebench.data.pull.yfinance_source import convert_yfinance, fetch_yfinance
from tradebench.data.schema import Manifest
from tradebench.errors import ConfigError, DataError, TradebenchError

STEPS: dict[str, tuple[Callable[[PullRequest], Any], Callable[[Any], Converted]]] = {
    "akshare": (fetch_akshare, convert_akshare),
    "baostock": (fetch_baostock, convert_baostock),
    "yfinance": (fetch_yfinance, convert_yfinance),
}


def fetch(req: PullRequest) -> Any:
    """The source's frames; a library failure (network, unknown code) becomes a `DataError`."""
    if req.source not in STEPS:
        raise ConfigError(f"unknown --source {req.source!r}; use one of {', '.join(SOURCES)}")
    try:
        return STEPS[req.source][0](req)
    except TradebenchError:
        raise
    except Exception as exc:  # the library's own failure: one line, nothing written
        raise DataError(
            f"{req.source} failed while fetching ({type(exc).__name__}: {exc}); check the "
            "connection, the codes and the dates"
        ) from exc


def pull_dataset(req: PullRequest) -> Manifest:
    """Pull bars (and index, membership) through the source's library into a dataset."""
    frames = fetch(req)
    return write_converted(req, STEPS[req.source][1](frames))
