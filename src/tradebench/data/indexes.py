"""Display names of benchmark indexes, by the symbol a dataset's manifest records."""

from __future__ import annotations

INDEX_NAMES: dict[str, str] = {
    "SH000300": "CSI300",
    "SZ399300": "CSI300",
    "SH000905": "CSI500",
    "SH000852": "CSI1000",
    "SH000016": "SSE50",
    "SPY": "S&P 500 (SPY)",
}
"""Known index symbols and the name a prompt or a report uses for them."""


def index_name(symbol: str | None) -> str:
    """The benchmark's name for a prompt: a known index by name, else its symbol, else a
    generic phrase when the dataset has no index."""
    if not symbol:
        return "the benchmark index"
    return INDEX_NAMES.get(symbol.upper(), symbol)
