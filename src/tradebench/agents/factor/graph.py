"""The stock graph of the GATs model: return correlations before the training window.

Each stock links to itself and to its `top_k` most correlated peers over the `days`
trading days that end the day before the training window starts, so the graph reads no
row of the training, validation or evaluation windows' labels. A stock with too few
returns in the window links to itself only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["correlation_graph"]

MIN_SHARE = 0.8
"""A stock needs finite returns on this share of the window's days to get neighbours."""


def correlation_graph(close: np.ndarray, top_k: int) -> np.ndarray:
    """(N, N) symmetric boolean adjacency from (days, N) adjusted closes, self loops on."""
    n = close.shape[1]
    adj = np.eye(n, dtype=bool)
    if close.shape[0] < 3 or top_k <= 0:
        return adj
    with np.errstate(invalid="ignore", divide="ignore"):
        ret = close[1:] / close[:-1] - 1.0
    ok = np.isfinite(ret)
    enough = ok.mean(axis=0) >= MIN_SHARE
    r = np.where(ok, ret, np.nan)[:, enough]
    r = r - np.nanmean(r, axis=0)
    sd = np.sqrt(np.nanmean(r**2, axis=0))
    z = np.nan_to_num(r / np.where(sd > 0, sd, np.nan))
    corr = (z.T @ z) / max(z.shape[0], 1)
    np.fill_diagonal(corr, -np.inf)
    k = min(top_k, corr.shape[0] - 1)
    if k <= 0:
        return adj
    cols = np.flatnonzero(enough)
    peers = np.argpartition(-corr, k - 1, axis=1)[:, :k]
    rows = np.repeat(cols, k)
    adj[rows, cols[peers.ravel()]] = True
    return adj | adj.T
