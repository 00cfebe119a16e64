"""Write AAPL's bars from the shared S&P 500 file as the CSV `yfinance.py` serves.

Run: python perf/public_mcq/bars_csv.py OUT.csv [--bars sp500_daily_adj_2005_2025.parquet]
"""

import argparse
from pathlib import Path

import pandas as pd

DEFAULT = Path(__file__).resolve().parents[3] / "shared/data/us/sp500_daily_adj_2005_2025.parquet"

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--bars", type=Path, default=DEFAULT)
    args = parser.parse_args()
    bars = pd.read_parquet(args.bars, filters=[("symbol", "==", "AAPL")])
    frame = pd.DataFrame(
        {
            "Date": pd.to_datetime(bars["date"]),
            "Open": bars["open"],
            "High": bars["high"],
            "Low": bars["low"],
            "Close": bars["close"],
            "Adj Close": bars["close"],
            "Volume": bars["volume"],
        }
    )
    frame.to_csv(args.out, index=False)
