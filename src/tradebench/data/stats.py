"""Summary statistics of a dataset's market: used to calibrate and describe datasets."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from tradebench.data.dataset import Dataset


class MarketStats(BaseModel):
    """Headline statistics of a market panel (suspended days excluded from returns)."""

    index_vol: float = Field(description="annualised vol of the index's daily returns")
    median_stock_vol: float = Field(description="median annualised vol of adjusted returns")
    dispersion: float = Field(description="mean daily cross-sectional std of returns")
    limit_up_freq: float = Field(description="share of stock-days closing at the upper limit")
    limit_down_freq: float = Field(description="share of stock-days closing at the lower limit")
    suspended_frac: float = Field(description="share of listed stock-days suspended")
    median_kurtosis: float = Field(description="median excess kurtosis of stock returns")


def market_stats(dataset: Dataset, periods_per_year: int = 252) -> MarketStats:
    """Compute `MarketStats` over the whole panel."""
    p = dataset.panel
    adj = p.adjusted["adj_close"]
    halted = p.suspended[1:] | p.suspended[:-1]
    ret = np.where(halted, np.nan, adj[1:] / adj[:-1] - 1)
    raw = p.fields["close"]
    raw_ret = np.where(halted, np.nan, raw[1:] / raw[:-1] - 1)
    valid = np.isfinite(raw_ret)
    threshold = p.limit_threshold[None, :]
    idx = p.index["close"]
    idx_ret = idx[1:] / idx[:-1] - 1
    scale = np.sqrt(periods_per_year)
    centred = ret - np.nanmean(ret, axis=0)
    kurt = np.nanmean(centred**4, axis=0) / np.nanmean(centred**2, axis=0) ** 2 - 3
    has_limit = threshold > 0
    return MarketStats(
        index_vol=float(np.nanstd(idx_ret) * scale) if np.isfinite(idx_ret).any() else np.nan,
        median_stock_vol=float(np.nanmedian(np.nanstd(ret, axis=0)) * scale),
        dispersion=float(np.nanmean(np.nanstd(ret, axis=1))),
        limit_up_freq=float(((raw_ret >= threshold) & valid & has_limit).sum() / valid.sum()),
        limit_down_freq=float(((raw_ret <= -threshold) & valid & has_limit).sum() / valid.sum()),
        suspended_frac=float(p.suspended[p.listed].mean()),
        median_kurtosis=float(np.nanmedian(kurt)),
    )
