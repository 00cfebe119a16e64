"""An offline stand-in for `yfinance.download`, for timing the public Backtrader-Bench code.

The public builder and checker fetch their bars with `yfinance.download(symbol, start, end)`.
Put this folder first on `PYTHONPATH` and they read the CSV at `$BARS_CSV` instead (written by
`bars_csv.py` from the shared S&P 500 file, the same adjusted bars tradebench reads), so both
sides of `perf/mcq.py --public-build/--public-check` build from the same data, offline.
"""

import os

import pandas as pd


def download(symbol, start=None, end=None, **_kwargs):
    """The CSV's bars in [start, end) (yfinance's end is exclusive), indexed by date."""
    frame = pd.read_csv(os.environ["BARS_CSV"], parse_dates=["Date"]).set_index("Date")
    return frame[(frame.index >= pd.Timestamp(start)) & (frame.index < pd.Timestamp(end))]
