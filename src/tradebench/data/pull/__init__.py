"""Pull daily bars through the data libraries users already have (akshare, baostock, yfinance).

Each source has a thin `fetch_*` function that calls the library's documented functions
and a pure `convert_*` function that turns the library's frames (its own column names,
dtypes and units) into canonical frames; `pull_dataset` fetches, converts and writes the
dataset through the same assembly and checks as every importer (findings reported, never
dropped). See docs/datasets.md ("Pulling from akshare, baostock and yfinance").
"""

from tradebench.data.pull.common import Converted, PullRequest
from tradebench.data.pull.run import pull_dataset

__all__ = ["Converted", "PullRequest", "pull_dataset"]
